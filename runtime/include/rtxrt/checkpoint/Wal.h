//===- Wal.h - the write-ahead log between checkpoints ----------*- C++ -*-===//
//
// One record per committed step: what a resume needs to continue exactly
// where the run stopped, and a hash of the parameters to prove it did. A
// checkpoint is taken every N steps; the log covers the steps between, so a
// resume = the latest checkpoint + the log (docs/checkpoint.md, "The log").
//
// Record (little-endian, 48 bytes):
//   u32 magic 'RWAL' | u16 version 1 | u16 payload bytes (36)
//   i64 step | i64 data position | u64 RNG counter | f32 loss scale
//   u64 parameter hash
//   u32 CRC32C of everything before it in the record
// A crash can leave a torn last record; opening the log finds it (short, or
// failing its CRC with nothing valid after it) and cuts it. A bad record
// with valid ones after it is not a torn tail but corruption, and is an
// error naming its byte offset; so is a tail longer than one record that
// holds none (a damaged file, or one that is not a log).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_WAL_H
#define RTXRT_WAL_H

#include <cstdint>
#include <string>
#include <vector>

namespace rtxrt::wal {

struct Record {
  int64_t step = 0;
  int64_t dataPosition = 0;
  uint64_t rngCounter = 0;
  float lossScale = 1.0f;
  uint64_t parameterHash = 0;
  bool operator==(const Record &other) const;
};

/// What a log holds, and what of it was a torn tail.
struct Contents {
  std::vector<Record> records;
  int64_t validBytes = 0; ///< the length up to the last good record
  int64_t tornBytes = 0;  ///< bytes after it (a torn tail)
};

/// Reads the log at `path` (a missing file is an empty log). Throws
/// rtxrt::Error naming the offset when a bad record has good ones after it.
Contents read(const std::string &path);

/// Appends records to a log, fsyncing every `syncEvery` records.
class Writer {
public:
  /// Opens `path` (creating it), reads it, and cuts a torn tail (the count
  /// of bytes cut is in contents().tornBytes). `syncEvery` 0: only sync().
  Writer(const std::string &path, int64_t syncEvery);
  ~Writer();
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  /// What the log held when it was opened.
  const Contents &contents() const { return opened_; }
  /// Appends one record; steps must increase.
  void append(const Record &record);
  /// Makes every appended record durable (fsync).
  void sync();
  /// Removes the records of steps at or before `step` (a checkpoint now
  /// covers them): the log is rewritten aside and renamed.
  void truncateThrough(int64_t step);
  /// Removes the records of steps after `step` (a resume from the
  /// checkpoint of `step` that will not replay them bit for bit).
  void truncateAfter(int64_t step);

private:
  void keepOnly(int64_t after, int64_t through);

  std::string path_;
  int fd_ = -1;
  int64_t syncEvery_ = 0, unsynced_ = 0, lastStep_ = -1;
  Contents opened_;
  std::vector<Record> live_;
};

/// A hash of a state held as blocks spread over ranks: the sum (mod 2^64)
/// of each block's hash (its tensor's name, its offsets and its bytes), so
/// that it depends neither on the order the blocks are visited nor on which
/// rank holds which: each rank hashes the blocks it writes to a checkpoint,
/// and the ranks' values add up. It does depend on how the plan cuts the
/// tensors into blocks, so two runs compare only under the same plan.
class StateHash {
public:
  void add(const std::string &tensor, const std::vector<int64_t> &offsets,
           const void *data, size_t size);
  /// Adds another rank's value.
  void combine(uint64_t other) { value_ += other; }
  uint64_t value() const { return value_; }

private:
  uint64_t value_ = 0;
};

} // namespace rtxrt::wal

#endif // RTXRT_WAL_H
