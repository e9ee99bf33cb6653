//===- OffloadStore.cpp - optimizer state outside device memory -----------===//
//
// One class serves both tiers. Every asynchronous transfer is a Transfer
// object that a caller's fetch() or store() starts and one internal thread
// completes:
//  - Host: a worker thread copies to or from the held memory (so a copy
//    overlaps the caller's work, as ZeRO-Offload's do).
//  - Files with io_uring: the caller opens the file and submits the read or
//    write; a reaper thread waits for completions and resubmits the rest of
//    a short transfer. Submissions (the caller's and the reaper's) are made
//    under the mutex; the reaper waits for completions without it, which
//    liburing allows (one thread submits, another reaps).
//  - Files without io_uring: the worker thread runs pread/pwrite.
// Slots, key states, statistics and the first error live under one mutex.
//
// No fsync anywhere: offload files are working storage for one run, not
// checkpoints, and are removed when the store is destroyed.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/offload/OffloadStore.h"

#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

using namespace rtxrt;

namespace {

using Clock = std::chrono::steady_clock;

/// O_DIRECT needs buffers, lengths and offsets aligned to the device's
/// logical block; 4096 covers current drives.
constexpr size_t kBlock = 4096;
/// io_uring's lengths are 32-bit, and Linux moves at most ~2 GiB per call.
constexpr size_t kMaxChunk = size_t{1} << 30;
/// A transfer's error besides errno values: the file ended early.
constexpr int kShortFile = -1;

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string errnoText(int error) {
  return std::generic_category().message(error);
}

struct FreeDeleter {
  void operator()(unsigned char *p) const { std::free(p); }
};
/// Plain aligned memory, invisible to rtxrt's allocator counters.
using AlignedBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

AlignedBuffer allocateAligned(size_t align, size_t bytes,
                              const std::string &what) {
  void *p =
      std::aligned_alloc(align, roundUp(std::max<size_t>(bytes, 1), align));
  if (!p)
    throw Error("offload: cannot allocate " + std::to_string(bytes) +
                " bytes for " + what);
  return AlignedBuffer(static_cast<unsigned char *>(p));
}

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

struct Entry {
  Shape shape;
  DType dtype = DType::F32;
  size_t bytes = 0;      // the value's
  size_t stored = 0;     // what the tier holds (O_DIRECT files: rounded up)
  std::string path;      // Files
  AlignedBuffer held;    // Host
  int reads = 0;         // reads in flight (a key may be fetched again)
  bool writing = false;  // a write in flight
  bool buffered = false; // Files: this file refused O_DIRECT
  std::string lost;      // why the tier holds no complete value, or ""
};

struct Transfer {
  std::string key;
  Entry *entry = nullptr;
  bool write = false;
  int fd = -1;
  unsigned char *data = nullptr; // the tensor's buffer, or the staging
  size_t size = 0;
  size_t done = 0;
  Tensor tensor;         // read: the result; write: the value until written
  AlignedBuffer staging; // O_DIRECT: the tensor's buffer is not aligned
  std::promise<Tensor> promise;
  Clock::time_point start;
};

class Store final : public OffloadStore {
public:
  explicit Store(OffloadOptions options);
  ~Store() override;
  void put(const std::string &key, const Tensor &value) override;
  std::shared_future<Tensor> fetch(const std::string &key) override;
  void store(const std::string &key, const Tensor &value) override;
  void flush() override;
  Tensor read(const std::string &key) override;
  OffloadStats stats() const override;

private:
  using Lock = std::unique_lock<std::mutex>;
  bool files() const { return options_.tier == OffloadTier::Files; }
  void note(const std::string &line) const {
    if (options_.log)
      options_.log(line);
  }
  bool probeDirect() const;
  Entry &entryOf(const std::string &key, const char *what);
  void throwIfFailed() const {
    if (!error_.empty())
      throw Error(error_);
  }
  template <typename Ready> void waitBlocked(Lock &lock, Ready ready);
  void takeSlot(Lock &lock, const std::string &key, Entry &e);
  void releaseSlot(Entry &e);
  /// `fetched`, holding its slot until its last copy is released.
  Tensor holdingSlot(const Tensor &fetched, size_t bytes);
  void addInFlight(int64_t bytes);
  std::unique_ptr<Transfer> prepare(const std::string &key, Entry &e,
                                    bool write, const Tensor &tensor);
  int openFile(Transfer &t, int flags);
  int moveNow(Transfer &t);
  void transferNow(const std::string &key, Entry &e, bool write,
                   const Tensor &tensor, int flags);
  void start(std::unique_ptr<Transfer> t);
  int submitToRing(Transfer *t);
  void slowDisk(Clock::time_point start);
  void finish(Transfer *t, int error);
  void finishLocked(Transfer &t, int error);
  std::string failure(const Transfer &t, int error) const;
  void workerLoop();
  void reaperLoop();

  OffloadOptions options_;
  bool createdDirectory_ = false;
  bool direct_ = false;
  bool uring_ = false;
  io_uring ring_{};
  std::thread thread_;

  /// What a fetched tensor's deleter updates: shared, because a tensor may
  /// outlive the store.
  struct Core {
    std::mutex mutex;
    std::condition_variable changed; // a transfer finished, a slot freed
    int64_t slots = 0;               // taken
    OffloadStats stats;
  };
  std::shared_ptr<Core> core_ = std::make_shared<Core>();
  std::mutex &mutex_ = core_->mutex;
  std::condition_variable &changed_ = core_->changed;
  std::condition_variable work_; // the worker's queue grew
  std::deque<Transfer *> queue_;
  bool stopping_ = false;
  std::map<std::string, Entry> entries_; // nodes stay put: Transfers point
  std::map<std::string, std::string> fileOwners_; // file name -> key
  int64_t &slots_ = core_->slots;
  int64_t writing_ = 0; // keys whose write is in flight
  int64_t active_ = 0;  // transfers in flight
  std::string error_;   // the first failure
  OffloadStats &stats_ = core_->stats;
  /// Fetched futures' waits for data; shared because a future may outlive
  /// the store.
  std::shared_ptr<std::atomic<int64_t>> dataWaitNanos_ =
      std::make_shared<std::atomic<int64_t>>(0);
  Clock::time_point diskFreeAt_; // the completing thread's only
};

Store::Store(OffloadOptions options) : options_(std::move(options)) {
  if (options_.maxInFlight < 1)
    throw Error("offload: maxInFlight must be at least 1, got " +
                std::to_string(options_.maxInFlight));
  if (files()) {
    const std::string &dir = options_.directory;
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
    if (options_.tryUring) {
      // Each entry is submitted as soon as it is prepared, so a few
      // submission entries suffice for any K; completions beyond the
      // completion queue wait in the kernel (IORING_FEAT_NODROP).
      int r = io_uring_queue_init(8, &ring_, 0);
      uring_ = r == 0;
      note(uring_ ? "offload: io_uring for reads and writes"
                  : "offload: io_uring is unavailable (" + errnoText(-r) +
                        "); using pread/pwrite on a worker thread");
    } else {
      note("offload: io_uring not tried; using pread/pwrite on a worker "
           "thread");
    }
  }
  if (uring_)
    thread_ = std::thread([this] { reaperLoop(); });
  else
    thread_ = std::thread([this] { workerLoop(); });
}

/// Whether the directory's file system takes O_DIRECT. Some refuse it at
/// open() and others only at the first transfer, both with EINVAL, so the
/// probe writes and reads one block.
bool Store::probeDirect() const {
  std::string path = options_.directory + "/rtx-offload-probe.tmp";
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
    throw Error("offload: cannot use " + options_.directory + ": " + path +
                ": " + errnoText(error));
  return error == 0;
}

Store::~Store() {
  Lock lock(mutex_);
  changed_.wait(lock, [&] { return active_ == 0; });
  stopping_ = true;
  if (uring_) {
    // A NOP without a Transfer tells the reaper to end; the queue is empty,
    // so a submission entry is free.
    if (io_uring_sqe *sqe = io_uring_get_sqe(&ring_)) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);
      io_uring_submit(&ring_);
    }
  }
  work_.notify_all();
  lock.unlock();
  thread_.join();
  if (uring_)
    io_uring_queue_exit(&ring_);
  for (auto &[key, e] : entries_)
    if (!e.path.empty())
      ::unlink(e.path.c_str());
  if (createdDirectory_) {
    std::error_code ignored; // a folder with other files stays
    std::filesystem::remove(options_.directory, ignored);
  }
}

Entry &Store::entryOf(const std::string &key, const char *what) {
  auto it = entries_.find(key);
  if (it == entries_.end())
    throw Error(std::string("offload: ") + what + " of unknown key '" + key +
                "' (put() it first)");
  return it->second;
}

template <typename Ready> void Store::waitBlocked(Lock &lock, Ready ready) {
  if (ready())
    return;
  Clock::time_point begin = Clock::now();
  changed_.wait(lock, ready);
  stats_.blockedSeconds +=
      std::chrono::duration<double>(Clock::now() - begin).count();
}

void Store::addInFlight(int64_t bytes) {
  stats_.inFlightBytes += bytes;
  stats_.peakInFlightBytes =
      std::max(stats_.peakInFlightBytes, stats_.inFlightBytes);
}

void Store::takeSlot(Lock &lock, const std::string &key, Entry &e) {
  // A slot frees when a write finishes or a fetched tensor is released
  // (maybe on another thread: a collective still reading it). When only
  // the caller itself could free one, waiting never ends: after
  // stallSeconds it is an error, not a hang.
  auto ready = [&] { return slots_ < options_.maxInFlight || !error_.empty(); };
  if (!ready()) {
    Clock::time_point begin = Clock::now();
    bool freed = changed_.wait_for(
        lock, std::chrono::duration<double>(options_.stallSeconds), ready);
    stats_.blockedSeconds +=
        std::chrono::duration<double>(Clock::now() - begin).count();
    if (!freed) {
      std::string k = std::to_string(options_.maxInFlight);
      throw Error("offload: no free slot for '" + key + "' within " +
                  std::to_string(options_.stallSeconds) + " s: all K=" + k +
                  " buffers in flight are fetched tensors still held (" +
                  std::to_string(writing_) +
                  " writes in progress); the program holds more fetched "
                  "buffers at once than its slots allow");
    }
  }
  throwIfFailed();
  ++slots_;
  addInFlight(e.bytes);
}

Tensor Store::holdingSlot(const Tensor &fetched, size_t bytes) {
  // A view of the fetched buffer whose deleter gives the slot back; it
  // keeps the buffer alive and may outlive the store (core_ is shared).
  std::shared_ptr<Core> core = core_;
  std::shared_ptr<unsigned char> buffer = fetched.buffer();
  std::shared_ptr<unsigned char> view(
      buffer.get(), [core, buffer, bytes](unsigned char *) mutable {
        buffer.reset();
        std::lock_guard<std::mutex> lock(core->mutex);
        --core->slots;
        core->stats.inFlightBytes -= static_cast<int64_t>(bytes);
        core->changed.notify_all();
      });
  return Tensor::wrap(fetched.shape(), fetched.dtype(), std::move(view),
                      Device::Host);
}

void Store::releaseSlot(Entry &e) {
  --slots_;
  stats_.inFlightBytes -= e.bytes;
}

/// A transfer of e's whole value; the lock is held. With O_DIRECT the bytes
/// move through a staging buffer: tensors are neither 4096-aligned nor
/// sized in blocks.
std::unique_ptr<Transfer> Store::prepare(const std::string &key, Entry &e,
                                         bool write, const Tensor &tensor) {
  auto t = std::make_unique<Transfer>();
  t->key = key;
  t->entry = &e;
  t->write = write;
  t->tensor = tensor;
  t->data = static_cast<unsigned char *>(const_cast<void *>(tensor.raw()));
  t->size = e.bytes;
  t->start = Clock::now();
  if (files() && direct_) {
    t->size = roundUp(e.bytes, kBlock);
    t->staging = allocateAligned(kBlock, t->size, "staging '" + key + "'");
    if (write) {
      std::memcpy(t->staging.get(), t->data, e.bytes);
      std::memset(t->staging.get() + e.bytes, 0, t->size - e.bytes);
      t->tensor = Tensor(); // copied: the caller's buffer is free again
    }
    t->data = t->staging.get();
    addInFlight(t->size);
  }
  return t;
}

/// Opens t's file; 0 or an errno. A file that refuses O_DIRECT although the
/// directory took it (a symlink to a device, another file system mounted
/// below) is used buffered.
int Store::openFile(Transfer &t, int flags) {
  Entry &e = *t.entry;
  flags |= O_CLOEXEC;
  if (direct_ && !e.buffered) {
    t.fd = ::open(e.path.c_str(), flags | O_DIRECT, 0644);
    if (t.fd >= 0 || errno != EINVAL)
      return t.fd >= 0 ? 0 : errno;
    e.buffered = true;
    note("offload: " + e.path +
         " refuses O_DIRECT; using buffered reads and writes for it");
  }
  t.fd = ::open(e.path.c_str(), flags, 0644);
  return t.fd >= 0 ? 0 : errno;
}

/// Moves t's bytes with blocking calls; 0 or an error.
int Store::moveNow(Transfer &t) {
  if (!files()) {
    unsigned char *held = t.entry->held.get();
    std::memcpy(t.write ? held : t.data, t.write ? t.data : held, t.size);
    t.done = t.size;
    return 0;
  }
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

/// The test-only slow disk: one transfer at a time, each at least
/// throttleMs, so a lower bound on a sequence's time is deterministic.
void Store::slowDisk(Clock::time_point start) {
  if (options_.throttleMs <= 0)
    return;
  auto at = std::max(start, diskFreeAt_) +
            std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double, std::milli>(options_.throttleMs));
  std::this_thread::sleep_until(at);
  diskFreeAt_ = at;
}

std::string Store::failure(const Transfer &t, int error) const {
  std::string where = files() ? t.entry->path : "host memory";
  std::string why = error == kShortFile ? "the file ends after " +
                                              std::to_string(t.done) + " bytes"
                                        : errnoText(error);
  return std::string("offload: ") + (t.write ? "writing '" : "reading '") +
         t.key + "' (" + std::to_string(t.entry->bytes) + " bytes) " +
         (t.write ? "to " : "from ") + where + " failed: " + why;
}

/// put() and read(): one transfer on the caller's thread. e is not in
/// flight, so no other thread touches it.
void Store::transferNow(const std::string &key, Entry &e, bool write,
                        const Tensor &tensor, int flags) {
  std::unique_ptr<Transfer> t;
  {
    Lock lock(mutex_);
    t = prepare(key, e, write, tensor);
  }
  int error = files() ? openFile(*t, flags) : 0;
  if (!error)
    error = moveNow(*t);
  if (t->fd >= 0)
    ::close(t->fd);
  if (!error && !write && t->staging)
    std::memcpy(const_cast<void *>(tensor.raw()), t->staging.get(), e.bytes);
  if (options_.throttleMs > 0)
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(options_.throttleMs));
  Lock lock(mutex_);
  if (t->staging)
    stats_.inFlightBytes -= t->size;
  if (error)
    throw Error(failure(*t, error));
  ++(write ? stats_.writes : stats_.reads);
  (write ? stats_.bytesWritten : stats_.bytesRead) += t->size;
  if (write)
    e.stored = t->size;
}

void Store::put(const std::string &key, const Tensor &value) {
  if (value.onGpu())
    throw Error("offload: put of '" + key +
                "' with a GPU tensor; copy it to the host first");
  Entry *e;
  {
    Lock lock(mutex_);
    auto [it, added] = entries_.try_emplace(key);
    e = &it->second;
    if (!added) {
      changed_.wait(lock, [&] { return !e->writing && e->reads == 0; });
    }
    if (files() && e->path.empty()) {
      std::string name = fileNameOf(key);
      auto [owner, fresh] = fileOwners_.try_emplace(name, key);
      if (!fresh) {
        entries_.erase(it);
        throw Error("offload: keys '" + owner->second + "' and '" + key +
                    "' would share the file " + name);
      }
      e->path = options_.directory + "/" + name;
    }
    e->shape = value.shape();
    e->dtype = value.dtype();
    e->bytes = value.nbytes();
    e->lost.clear();
    if (!files())
      e->held = allocateAligned(64, e->bytes, "'" + key + "'");
  }
  try {
    transferNow(key, *e, /*write=*/true, value, O_WRONLY | O_CREAT | O_TRUNC);
  } catch (const Error &error) {
    Lock lock(mutex_);
    e->lost = error.what();
    throw;
  }
}

std::shared_future<Tensor> Store::fetch(const std::string &key) {
  Lock lock(mutex_);
  throwIfFailed();
  Entry &e = entryOf(key, "fetch");
  // The read must see the value of the key's write in progress.
  waitBlocked(lock, [&] { return !e.writing; });
  throwIfFailed();
  if (!e.lost.empty())
    throw Error(e.lost);
  takeSlot(lock, key, e);
  std::unique_ptr<Transfer> t;
  try {
    t = prepare(key, e, /*write=*/false,
                Tensor::uninitialized(e.shape, e.dtype));
  } catch (...) {
    releaseSlot(e);
    throw;
  }
  ++e.reads;
  std::shared_future<Tensor> data = t->promise.get_future().share();
  start(std::move(t));
  std::shared_ptr<std::atomic<int64_t>> waited = dataWaitNanos_;
  return std::async(std::launch::deferred,
                    [data, waited] {
                      Clock::time_point begin = Clock::now();
                      data.wait();
                      waited->fetch_add(
                          std::chrono::duration_cast<std::chrono::nanoseconds>(
                              Clock::now() - begin)
                              .count());
                      return data.get();
                    })
      .share();
}

void Store::store(const std::string &key, const Tensor &value) {
  if (beforeStore_)
    beforeStore_(key);
  Lock lock(mutex_);
  throwIfFailed();
  Entry &e = entryOf(key, "store");
  if (value.onGpu())
    throw Error("offload: store of '" + key +
                "' with a GPU tensor; copy it to the host first");
  if (value.shape() != e.shape || value.dtype() != e.dtype)
    throw Error("offload: store of '" + key + "' with " +
                dtypeName(value.dtype()) + " " + shapeToString(value.shape()) +
                " does not match its put() value, " + dtypeName(e.dtype) + " " +
                shapeToString(e.shape));
  // Writes of one key stay in order, after the reads of the old value.
  waitBlocked(lock, [&] { return !e.writing && e.reads == 0; });
  throwIfFailed();
  takeSlot(lock, key, e);
  std::unique_ptr<Transfer> t;
  try {
    t = prepare(key, e, /*write=*/true, value);
  } catch (...) {
    releaseSlot(e);
    throw;
  }
  e.writing = true;
  ++writing_;
  start(std::move(t));
}

void Store::flush() {
  Lock lock(mutex_);
  changed_.wait(lock, [&] { return writing_ == 0; });
  throwIfFailed();
}

Tensor Store::read(const std::string &key) {
  Entry *e;
  {
    Lock lock(mutex_);
    e = &entryOf(key, "read");
    changed_.wait(lock, [&] { return !e->writing; });
    if (!e->lost.empty())
      throw Error(e->lost + "; the store holds no complete value of '" + key +
                  "'");
  }
  // A read in flight of the same key only reads too.
  Tensor value = Tensor::uninitialized(e->shape, e->dtype);
  transferNow(key, *e, /*write=*/false, value, O_RDONLY);
  return value;
}

OffloadStats Store::stats() const {
  Lock lock(mutex_);
  OffloadStats s = stats_;
  s.blockedSeconds += 1e-9 * double(dataWaitNanos_->load());
  s.heldBytes = 0;
  for (const auto &[key, e] : entries_)
    s.heldBytes += e.stored;
  s.direct = direct_;
  s.uring = uring_;
  return s;
}

/// Hands t to the internal thread; the lock is held (submissions to the ring
/// are made under it).
void Store::start(std::unique_ptr<Transfer> t) {
  ++active_;
  Transfer *raw = t.release();
  if (files()) {
    int error = openFile(*raw, raw->write ? O_WRONLY | O_CREAT : O_RDONLY);
    if (!error && uring_)
      error = submitToRing(raw);
    if (error) {
      if (raw->fd >= 0)
        ::close(raw->fd);
      finishLocked(*raw, error);
      // The caller still holds the tensor: no deleter runs here.
      delete raw;
      --active_;
      changed_.notify_all();
      return;
    }
    if (uring_)
      return;
  }
  queue_.push_back(raw);
  work_.notify_one();
}

/// Submits the rest of t; 0 or an errno. The lock is held.
int Store::submitToRing(Transfer *t) {
  io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
  if (!sqe)
    return EBUSY; // cannot happen: every entry is submitted at once
  unsigned chunk = unsigned(std::min(t->size - t->done, kMaxChunk));
  if (t->write)
    io_uring_prep_write(sqe, t->fd, t->data + t->done, chunk, t->done);
  else
    io_uring_prep_read(sqe, t->fd, t->data + t->done, chunk, t->done);
  io_uring_sqe_set_data(sqe, t);
  int r = io_uring_submit(&ring_);
  return r < 0 ? -r : 0;
}

void Store::workerLoop() {
  Lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;
    Transfer *t = queue_.front();
    queue_.pop_front();
    lock.unlock();
    finish(t, moveNow(*t));
    lock.lock();
  }
}

void Store::reaperLoop() {
  for (;;) {
    io_uring_cqe *cqe = nullptr;
    // Waiting fails only when interrupted (EINTR): just wait again.
    if (io_uring_wait_cqe(&ring_, &cqe) < 0)
      continue;
    auto *t = static_cast<Transfer *>(io_uring_cqe_get_data(cqe));
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (!t)
      return; // the destructor's NOP
    // The submitter wrote t under the mutex and the kernel handed it over:
    // taking the mutex makes that order visible to the C++ memory model
    // (and to ThreadSanitizer), which does not see through the ring.
    Lock lock(mutex_);
    if (res > 0)
      t->done += size_t(res);
    int error = 0;
    if (res == -EINTR || res == -EAGAIN || (res > 0 && t->done < t->size)) {
      error = submitToRing(t);
      if (!error)
        continue;
    } else if (res < 0) {
      error = -res;
    } else if (t->done < t->size) {
      error = t->write ? EIO : kShortFile;
    }
    lock.unlock();
    finish(t, error);
  }
}

/// Completes t on the internal thread.
void Store::finish(Transfer *raw, int error) {
  std::unique_ptr<Transfer> t(raw); // freed after the lock is released
  slowDisk(t->start);
  if (t->fd >= 0)
    ::close(t->fd);
  if (!error && !t->write && t->staging)
    std::memcpy(t->tensor.raw(), t->staging.get(), t->entry->bytes);
  Tensor value;
  AlignedBuffer staging;
  {
    Lock lock(mutex_);
    finishLocked(*t, error);
    value = std::move(t->tensor);
    staging = std::move(t->staging);
  }
  // Freed without the lock (a fetched tensor's deleter takes it) and before
  // anyone wakes: a flush() that returns leaves no buffer of the store
  // alive (the allocator counters show it).
  value = Tensor();
  staging.reset();
  Lock lock(mutex_);
  --active_;
  changed_.notify_all();
}

void Store::finishLocked(Transfer &t, int error) {
  Entry &e = *t.entry;
  if (t.staging)
    stats_.inFlightBytes -= t.size;
  std::string failed = error ? failure(t, error) : "";
  if (error && error_.empty())
    error_ = failed;
  if (t.write) {
    --writing_;
    if (error) {
      e.lost = failed;
    } else {
      ++stats_.writes;
      stats_.bytesWritten += t.size;
    }
    releaseSlot(e);
    e.writing = false;
  } else if (error) {
    releaseSlot(e);
    --e.reads;
    t.promise.set_exception(std::make_exception_ptr(Error(failed)));
  } else {
    ++stats_.reads;
    stats_.bytesRead += t.size;
    --e.reads;
    // The slot goes with the last copy of the fetched tensor: the step holds
    // a fetched buffer until its last use, and that is what is in flight.
    t.promise.set_value(holdingSlot(t.tensor, e.bytes));
  }
}

} // namespace

OffloadStore::~OffloadStore() = default;

std::unique_ptr<OffloadStore> OffloadStore::create(OffloadOptions options) {
  return std::make_unique<Store>(std::move(options));
}

std::optional<OffloadOptions>
rtxrt::offloadOptionsFor(const std::vector<ArgSpec> &args,
                         const std::string &directory, int64_t rank) {
  std::string tier;
  for (const ArgSpec &arg : args) {
    if (arg.offload.empty())
      continue;
    if (!tier.empty() && tier != arg.offload)
      throw Error("the step offloads to both '" + tier + "' and '" +
                  arg.offload + "'; a run has one offload tier");
    tier = arg.offload;
  }
  if (tier.empty()) {
    if (!directory.empty())
      throw Error("--offload-dir is for steps compiled with offload=nvme; "
                  "this one offloads nothing");
    return std::nullopt;
  }
  OffloadOptions options;
  if (tier == "nvme") {
    if (directory.empty())
      throw Error("the step keeps its optimizer state on an SSD "
                  "(offload=nvme): give it a folder with --offload-dir DIR");
    options.tier = OffloadTier::Files;
    options.directory = directory + "/rank-" + std::to_string(rank);
  } else if (!directory.empty()) {
    throw Error("--offload-dir is for steps compiled with offload=nvme; "
                "this one offloads to host memory (offload=cpu)");
  }
  return options;
}

