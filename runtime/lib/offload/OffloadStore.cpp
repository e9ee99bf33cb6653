//===- OffloadStore.cpp - optimizer state outside device memory -----------===//
//
// What both tiers share: keys, the K slots in flight, the order of the
// transfers of one key, the first failure and the statistics, all under one
// mutex. Where values live and how their bytes move is the tier's
// (lib/offload/: HostTier, FileTier). Every asynchronous transfer is a
// Transfer that a caller's fetch() or store() starts and the tier's thread
// ends with finish().
//
//===----------------------------------------------------------------------===//

#include "rtxrt/offload/OffloadStore.h"

#include "offload/Tier.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::offload;

namespace {

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
  void transferNow(const std::string &key, Entry &e, bool write,
                   const Tensor &tensor);
  void start(std::unique_ptr<Transfer> t);
  void slowDisk(Clock::time_point start);
  void finish(Transfer *t, int error);
  void finishLocked(Transfer &t, int error);
  std::string failure(const Transfer &t, int error) const;

  OffloadOptions options_;

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
  std::map<std::string, Entry> entries_; // nodes stay put: Transfers point
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
  /// Where values live; its thread calls finish(), which uses the members
  /// above, so it goes first (~Store resets it).
  std::unique_ptr<Tier> tier_;
};

Store::Store(OffloadOptions options) : options_(std::move(options)) {
  if (options_.maxInFlight < 1)
    throw Error("offload: maxInFlight must be at least 1, got " +
                std::to_string(options_.maxInFlight));
  tier_ =
      makeTier(options_, [this](Transfer *t, int error) { finish(t, error); });
}

Store::~Store() {
  {
    Lock lock(mutex_);
    changed_.wait(lock, [&] { return active_ == 0; });
  }
  // Ends the tier's thread, then the tier removes its files.
  tier_.reset();
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

/// A transfer of e's whole value; the lock is held. The tier may move it
/// through a buffer of its own (t->staging), which counts as in flight.
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
  tier_->stage(*t);
  if (t->staging)
    addInFlight(t->size);
  return t;
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
  std::string why = error == kShortFile ? "the file ends after " +
                                              std::to_string(t.done) + " bytes"
                                        : errnoText(error);
  return std::string("offload: ") + (t.write ? "writing '" : "reading '") +
         t.key + "' (" + std::to_string(t.entry->bytes) + " bytes) " +
         (t.write ? "to " : "from ") + tier_->where(*t.entry) +
         " failed: " + why;
}

/// put() and read(): one transfer on the caller's thread. e is not in
/// flight, so no other thread touches it.
void Store::transferNow(const std::string &key, Entry &e, bool write,
                        const Tensor &tensor) {
  std::unique_ptr<Transfer> t;
  {
    Lock lock(mutex_);
    t = prepare(key, e, write, tensor);
  }
  int error = tier_->moveNow(*t);
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
    e->shape = value.shape();
    e->dtype = value.dtype();
    e->bytes = value.nbytes();
    e->lost.clear();
    try {
      tier_->place(key, *e);
    } catch (const Error &error) {
      // A new key stays unknown; a known one holds no value of this size.
      if (added)
        entries_.erase(it);
      else
        e->lost = error.what();
      throw;
    }
  }
  try {
    transferNow(key, *e, /*write=*/true, value);
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
  transferNow(key, *e, /*write=*/false, value);
  return value;
}

OffloadStats Store::stats() const {
  Lock lock(mutex_);
  OffloadStats s = stats_;
  s.blockedSeconds += 1e-9 * double(dataWaitNanos_->load());
  s.heldBytes = 0;
  for (const auto &[key, e] : entries_)
    s.heldBytes += e.stored;
  tier_->describe(s);
  return s;
}

/// Hands t to the tier; the lock is held.
void Store::start(std::unique_ptr<Transfer> t) {
  ++active_;
  Transfer *raw = t.release();
  if (int error = tier_->start(*raw)) {
    finishLocked(*raw, error);
    // The caller still holds the tensor: no deleter runs here.
    delete raw;
    --active_;
    changed_.notify_all();
  }
}

/// Ends t on the tier's thread, which is done with it.
void Store::finish(Transfer *raw, int error) {
  std::unique_ptr<Transfer> t(raw); // freed after the lock is released
  slowDisk(t->start);
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

