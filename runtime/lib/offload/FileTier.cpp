//===- FileTier.cpp - offloaded values in files (SSD/NVMe) ----------------===//

#include "FileTier.h"

#include "UringQueue.h"
#include "WorkerThread.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::offload;

namespace {

/// O_DIRECT needs buffers, lengths and offsets aligned to the device's
/// logical block; 4096 covers current drives.
constexpr size_t kBlock = 4096;
/// Linux moves at most ~2 GiB per call.
constexpr size_t kMaxChunk = size_t{1} << 30;

struct FilePlace final : Place {
  std::string path;
  bool buffered = false; // this file refused O_DIRECT
};

FilePlace &fileOf(const Entry &e) { return static_cast<FilePlace &>(*e.place); }

/// KEY.buf where the key is a safe file name; otherwise the key sanitised
/// plus its FNV-1a hash, so that "a/b" and "a_b" get different files.
std::string fileNameOf(const std::string &key) {
  bool plain = !key.empty() && key.size() <= 200 && key[0] != '.';
  std::string name;
  for (char c : key) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                c == '_' || c == '-';
    plain = plain && safe;
    if (name.size() < 200)
      name += safe ? c : '_';
  }
  if (plain)
    return key + ".buf";
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : key)
    hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(hash));
  return name + "-" + hex + ".buf";
}

} // namespace

FileTier::FileTier(const OffloadOptions &options, Done done)
    : directory_(options.directory), log_(options.log), done_(std::move(done)) {
  const std::string &dir = directory_;
  if (dir.empty())
    throw Error("offload: the files tier needs a directory");
  std::error_code ec;
  createdDirectory_ = std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error("offload: cannot create " + dir + ": " + ec.message());
  direct_ = probeDirect();
  note(direct_ ? "offload: " + dir + ": O_DIRECT reads and writes"
               : "offload: " + dir +
                     " does not support O_DIRECT; using buffered reads "
                     "and writes");
  startThread(options.tryUring);
}

void FileTier::startThread(bool tryUring) {
  Done finished = [this](Transfer *t, int error) { finish(t, error); };
  if (tryUring) {
    int error = 0;
    thread_ = UringQueue::create(finished, error);
    uring_ = thread_ != nullptr;
    note(uring_ ? "offload: io_uring for reads and writes"
                : "offload: io_uring is unavailable (" + errnoText(error) +
                      "); using pread/pwrite on a worker thread");
  } else {
    note("offload: io_uring not tried; using pread/pwrite on a worker "
         "thread");
  }
  if (!thread_)
    thread_ = std::make_unique<WorkerThread>(moveOpen, finished);
}

FileTier::~FileTier() {
  thread_.reset();
  for (const auto &[name, key] : owners_)
    ::unlink((directory_ + "/" + name).c_str());
  if (createdDirectory_) {
    std::error_code ignored; // a folder with other files stays
    std::filesystem::remove(directory_, ignored);
  }
}

/// Whether the directory's file system takes O_DIRECT. Some refuse it at
/// open() and others only at the first transfer, both with EINVAL, so the
/// probe writes and reads one block.
bool FileTier::probeDirect() const {
  std::string path = directory_ + "/rtx-offload-probe.tmp";
  int fd = ::open(path.c_str(),
                  O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    AlignedBuffer block = allocateAligned(kBlock, kBlock, "the O_DIRECT probe");
    std::memset(block.get(), 0, kBlock);
    if (::pwrite(fd, block.get(), kBlock, 0) != ssize_t(kBlock) ||
        ::pread(fd, block.get(), kBlock, 0) != ssize_t(kBlock))
      error = errno ? errno : EIO;
    ::close(fd);
  }
  ::unlink(path.c_str());
  if (error && error != EINVAL)
    throw Error("offload: cannot use " + directory_ + ": " + path + ": " +
                errnoText(error));
  return error == 0;
}

/// A key keeps its file when it is put again: put()'s write replaces it.
void FileTier::place(const std::string &key, Entry &e) {
  if (e.place)
    return;
  std::string name = fileNameOf(key);
  auto [owner, fresh] = owners_.try_emplace(name, key);
  if (!fresh)
    throw Error("offload: keys '" + owner->second + "' and '" + key +
                "' would share the file " + name);
  auto place = std::make_unique<FilePlace>();
  place->path = directory_ + "/" + name;
  e.place = std::move(place);
}

/// With O_DIRECT, through an aligned staging buffer of whole blocks; a
/// write's bytes are copied at once, so the caller's buffer is free again.
void FileTier::stage(Transfer &t) {
  if (!direct_)
    return;
  size_t bytes = t.entry->bytes;
  t.size = roundUp(bytes, kBlock);
  t.staging = allocateAligned(kBlock, t.size, "staging '" + t.key + "'");
  if (t.write) {
    std::memcpy(t.staging.get(), t.data, bytes);
    std::memset(t.staging.get() + bytes, 0, t.size - bytes);
    t.tensor = Tensor();
  }
  t.data = t.staging.get();
}

/// Opens t's file; 0 or an errno. A file that refuses O_DIRECT although the
/// directory took it (a symlink to a device, another file system mounted
/// below) is used buffered.
int FileTier::open(Transfer &t, int flags) {
  FilePlace &file = fileOf(*t.entry);
  flags |= O_CLOEXEC;
  if (direct_ && !file.buffered) {
    t.fd = ::open(file.path.c_str(), flags | O_DIRECT, 0644);
    if (t.fd >= 0 || errno != EINVAL)
      return t.fd >= 0 ? 0 : errno;
    file.buffered = true;
    note("offload: " + file.path +
         " refuses O_DIRECT; using buffered reads and writes for it");
  }
  t.fd = ::open(file.path.c_str(), flags, 0644);
  return t.fd >= 0 ? 0 : errno;
}

int FileTier::moveOpen(Transfer &t) {
  while (t.done < t.size) {
    size_t chunk = std::min(t.size - t.done, kMaxChunk);
    ssize_t n = t.write ? ::pwrite(t.fd, t.data + t.done, chunk, t.done)
                        : ::pread(t.fd, t.data + t.done, chunk, t.done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno;
    if (n == 0)
      return t.write ? EIO : kShortFile;
    t.done += n;
  }
  return 0;
}

int FileTier::moveNow(Transfer &t) {
  int error = open(t, t.write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY);
  if (!error)
    error = moveOpen(t);
  if (t.fd >= 0)
    ::close(t.fd);
  t.fd = -1;
  if (!error && !t.write && t.staging)
    std::memcpy(t.tensor.raw(), t.staging.get(), t.entry->bytes);
  return error;
}

int FileTier::start(Transfer &t) {
  int error = open(t, t.write ? O_WRONLY | O_CREAT : O_RDONLY);
  if (!error)
    error = thread_->start(t);
  if (error && t.fd >= 0) {
    ::close(t.fd);
    t.fd = -1;
  }
  return error;
}

void FileTier::finish(Transfer *t, int error) {
  if (t->fd >= 0)
    ::close(t->fd);
  t->fd = -1;
  if (!error && !t->write && t->staging)
    std::memcpy(t->tensor.raw(), t->staging.get(), t->entry->bytes);
  done_(t, error);
}

std::string FileTier::where(const Entry &e) const { return fileOf(e).path; }

void FileTier::describe(OffloadStats &stats) const {
  stats.direct = direct_;
  stats.uring = uring_;
}
