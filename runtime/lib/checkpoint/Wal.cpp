//===- Wal.cpp - the write-ahead log between checkpoints ------------------===//

#include "rtxrt/checkpoint/Wal.h"

#include "DurableFiles.h"
#include "rtxrt/checkpoint/Checkpoint.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::wal;

namespace {

constexpr uint32_t kMagic = 0x4c415752; // "RWAL" read little-endian
constexpr uint16_t kVersion = 1;
constexpr uint16_t kPayload = 36;
constexpr size_t kHeader = 8, kRecord = kHeader + kPayload + 4;

// x86-64 and every target rtx builds for are little-endian; the format is
// little-endian by definition (Wal.h), so plain copies write it.
static_assert(sizeof(float) == 4, "the log stores f32 loss scales");

template <typename T> void put(char *&at, T value) {
  std::memcpy(at, &value, sizeof value);
  at += sizeof value;
}
template <typename T> T take(const char *&at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  at += sizeof value;
  return value;
}

std::string encode(const Record &r) {
  std::string bytes(kRecord, '\0');
  char *at = bytes.data();
  put(at, kMagic);
  put(at, kVersion);
  put(at, kPayload);
  put(at, r.step);
  put(at, r.dataPosition);
  put(at, r.rngCounter);
  put(at, r.lossScale);
  put(at, r.parameterHash);
  put(at, checkpoint::crc32c(bytes.data(), kRecord - 4));
  return bytes;
}

/// The record at `at` when it is whole and passes its CRC.
bool decode(const char *at, size_t left, Record &r) {
  if (left < kRecord)
    return false;
  const char *p = at;
  if (take<uint32_t>(p) != kMagic || take<uint16_t>(p) != kVersion ||
      take<uint16_t>(p) != kPayload)
    return false;
  r.step = take<int64_t>(p);
  r.dataPosition = take<int64_t>(p);
  r.rngCounter = take<uint64_t>(p);
  r.lossScale = take<float>(p);
  r.parameterHash = take<uint64_t>(p);
  return take<uint32_t>(p) == checkpoint::crc32c(at, kRecord - 4);
}

} // namespace

bool Record::operator==(const Record &o) const {
  return step == o.step && dataPosition == o.dataPosition &&
         rngCounter == o.rngCounter && lossScale == o.lossScale &&
         parameterHash == o.parameterHash;
}

Contents wal::read(const std::string &path) {
  Contents contents;
  if (!durable::exists(path))
    return contents;
  std::string bytes = durable::readFile(path);
  size_t at = 0;
  Record r;
  while (decode(bytes.data() + at, bytes.size() - at, r)) {
    contents.records.push_back(r);
    at += kRecord;
  }
  // A torn tail is at most the one record being written when the process
  // stopped. A bad record followed by good ones was damaged after it was
  // written: cutting there would silently drop committed steps.
  for (size_t later = at + kRecord; later + kRecord <= bytes.size();
       later += kRecord)
    if (decode(bytes.data() + later, bytes.size() - later, r))
      throw Error("write-ahead log " + path + ": the record at byte " +
                  std::to_string(at) + " (after step " +
                  (contents.records.empty()
                       ? std::string("none")
                       : std::to_string(contents.records.back().step)) +
                  ") is corrupt, and valid records follow it");
  // More than one record's bytes that are no record: not what a crash
  // mid-append leaves but a damaged or foreign file, which cutting would
  // hide.
  if (bytes.size() - at > kRecord)
    throw Error("write-ahead log " + path + ": its " +
                std::to_string(bytes.size() - at) + " bytes from byte " +
                std::to_string(at) + " (after step " +
                (contents.records.empty()
                     ? std::string("none")
                     : std::to_string(contents.records.back().step)) +
                ") are not records of a log (a torn tail, left by a crash "
                "mid-append, is at most one record of " +
                std::to_string(kRecord) +
                " bytes): the file is damaged or not a log");
  contents.validBytes = static_cast<int64_t>(at);
  contents.tornBytes = static_cast<int64_t>(bytes.size() - at);
  return contents;
}

Writer::Writer(const std::string &path, int64_t syncEvery)
    : path_(path), syncEvery_(syncEvery) {
  opened_ = wal::read(path);
  live_ = opened_.records;
  if (!live_.empty())
    lastStep_ = live_.back().step;
  // The log may come before the first checkpoint made its directory.
  durable::makeDirectory(durable::parentOf(path));
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    durable::fail("cannot open", path, errno);
  if (opened_.tornBytes > 0) {
    if (ftruncate(fd_, opened_.validBytes) != 0)
      durable::fail("cannot cut the torn tail of", path, errno);
    durable::syncFile(fd_, path);
  }
  if (lseek(fd_, opened_.validBytes, SEEK_SET) < 0)
    durable::fail("cannot seek in", path, errno);
  durable::syncDirectory(durable::parentOf(path));
}

Writer::~Writer() {
  if (fd_ >= 0)
    close(fd_);
}

void Writer::append(const Record &record) {
  if (record.step <= lastStep_)
    throw Error("write-ahead log " + path_ + ": step " +
                std::to_string(record.step) + " appended after step " +
                std::to_string(lastStep_));
  std::string bytes = encode(record);
  durable::writeAll(fd_, bytes.data(), bytes.size(), path_);
  live_.push_back(record);
  lastStep_ = record.step;
  if (syncEvery_ > 0 && ++unsynced_ >= syncEvery_)
    sync();
}

void Writer::sync() {
  durable::syncFile(fd_, path_);
  unsynced_ = 0;
}

void Writer::truncateThrough(int64_t step) {
  keepOnly(step, std::numeric_limits<int64_t>::max());
}

void Writer::truncateAfter(int64_t step) {
  keepOnly(std::numeric_limits<int64_t>::min(), step);
  lastStep_ = live_.empty() ? -1 : live_.back().step;
}

void Writer::keepOnly(int64_t after, int64_t through) {
  std::string kept;
  std::vector<Record> remaining;
  for (const Record &r : live_)
    if (r.step > after && r.step <= through) {
      kept += encode(r);
      remaining.push_back(r);
    }
  durable::writeFileAtomically(path_, kept);
  close(fd_);
  fd_ = open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0)
    durable::fail("cannot open", path_, errno);
  live_ = std::move(remaining);
  unsynced_ = 0;
}

namespace {
// SplitMix64's finaliser: spreads the CRCs' bits over all 64, so that the
// sum of many blocks' hashes does not cancel out in the low bits.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
} // namespace

void StateHash::add(const std::string &tensor,
                    const std::vector<int64_t> &offsets, const void *data,
                    size_t size) {
  uint64_t where = checkpoint::crc32c(tensor.data(), tensor.size());
  where = (where << 32) |
          checkpoint::crc32c(offsets.data(), offsets.size() * sizeof(int64_t));
  uint64_t what =
      (static_cast<uint64_t>(checkpoint::crc32c(data, size)) << 32) ^
      static_cast<uint64_t>(size);
  value_ += mix(mix(where) ^ what);
}
