//===- OffloadStore.h - optimizer state outside device memory ---*- C++ -*-===//
//
// ZeRO-Offload keeps optimizer state (and ZeRO-3 parameter shards) outside
// device memory between uses: in host memory or in files on an SSD/NVMe
// drive. A training step fetches each flat buffer just before its optimizer
// update and stores the new value back right after. At most K buffers are in
// flight (fetched and not yet written back), so a slow disk slows the step
// (backpressure) but never grows memory.
//
// Slots. fetch(key) takes one of K slots; the slot is freed once the write
// of the key's next store() has finished. A store() of a key that was not
// fetched takes a slot of its own until its write finishes. Without a free
// slot, fetch() and store() wait for a write in progress; when no write is in
// progress (all K buffers were fetched and wait for the caller's store()),
// waiting would never end, so they throw an Error instead.
//
// Errors. A failed transfer (ENOSPC, EIO, ...) is kept and every later
// fetch(), store() and flush() throws it: the first failure is never lost and
// never replaced by a later one. After a failed write the tier holds no
// complete value of that key (a partial write may already have overwritten
// the old one in place), so read() and fetch() of that key throw until a put()
// gives it a new value; other keys stay readable with read().
//
// Files. One file per key in the directory: DIR/KEY.buf for keys made of
// letters, digits, '.', '_' and '-' (not starting with '.'); other keys are
// sanitised and get a hash of the key. create() probes O_DIRECT with
// DIR/rtx-offload-probe.tmp. The store removes its files when destroyed:
// they are working storage, not checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOADSTORE_H
#define RTXRT_OFFLOADSTORE_H

#include "rtxrt/core/ArgSpec.h"
#include "rtxrt/core/Tensor.h"

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace rtxrt {

enum class OffloadTier {
  Host, // plain host memory, not counted by rtxrt's allocator
  Files // one file per key in a directory (SSD/NVMe)
};

struct OffloadOptions {
  OffloadTier tier = OffloadTier::Host;
  /// Files: the buffers' folder (created if missing).
  std::string directory;
  /// K: buffers in flight at once: fetched tensors still held (a slot
  /// frees when the last copy of a fetched tensor goes) and writes not yet
  /// finished.
  int64_t maxInFlight = 2;
  /// How long fetch() and store() wait for a slot before they fail: only the
  /// caller could free it then (it holds K fetched tensors), which would
  /// otherwise hang.
  double stallSeconds = 60;
  /// Test-only: a deliberately slow disk that serves one transfer at a time,
  /// each taking at least this long (both tiers).
  double throttleMs = 0;
  /// Files: try io_uring first. False gives what a machine without io_uring
  /// gets (pread/pwrite on a worker thread), so tests cover both.
  bool tryUring = true;
  /// One-line notes (whether O_DIRECT and io_uring are used); may be null.
  /// Called on the caller's thread; it must not call back into the store.
  std::function<void(const std::string &)> log;
};

struct OffloadStats {
  /// Transfers and their bytes, put() and read() included. Bytes are what
  /// moved: with O_DIRECT, sizes rounded up to 4096.
  int64_t reads = 0, writes = 0, bytesRead = 0, bytesWritten = 0;
  /// Bytes of buffers in flight (a slot counts its buffer's bytes), O_DIRECT
  /// staging buffers included: at most one per slot, plus put()'s or read()'s
  /// own while it runs.
  int64_t inFlightBytes = 0, peakInFlightBytes = 0;
  /// What the tier holds: host memory for Host, file bytes for Files.
  int64_t heldBytes = 0;
  /// Time the caller waited: fetch() and store() for a free slot or for a
  /// transfer of the same key, and the fetched futures' get() for data.
  double blockedSeconds = 0;
  bool direct = false; // Files: O_DIRECT in use
  bool uring = false;  // Files: io_uring in use (else pread/pwrite on a thread)
};

/// One rank's offloaded buffers. One caller thread per store; transfers
/// complete on an internal thread. read() may also be called from a second
/// thread for keys the caller does not store() meanwhile (setBeforeStore).
class OffloadStore {
public:
  /// Throws Error for bad options or a directory that cannot hold files.
  static std::unique_ptr<OffloadStore> create(OffloadOptions options);
  /// Waits for transfers in flight; never throws.
  virtual ~OffloadStore();

  /// Sets key's value, shape and dtype, synchronously (setup). The key must
  /// not be fetched.
  virtual void put(const std::string &key, const Tensor &value) = 0;
  /// Starts reading key's value into a new host tensor (allocated by rtxrt's
  /// allocator, so step peaks count it), in one of the K slots, which it
  /// keeps until the tensor's last copy is released. The future is
  /// deferred: its get() waits on the caller's thread, which counts in
  /// blockedSeconds, and throws the read's Error. A key may be fetched
  /// again before it is stored (a ZeRO-3 parameter shard is read for the
  /// forward pass, the backward pass and its update).
  virtual std::shared_future<Tensor> fetch(const std::string &key) = 0;
  /// Starts writing key's new value, of put()'s shape and dtype, in a slot
  /// of its own (after the reads of the old value in flight); returns at
  /// once unless no slot is free (backpressure). The store keeps value's
  /// buffer until it is written: do not modify it meanwhile (Tensor copies
  /// share buffers).
  virtual void store(const std::string &key, const Tensor &value) = 0;
  /// Waits for every write; throws the first failure.
  virtual void flush() = 0;
  /// key's current value, synchronously (results, state files); waits for a
  /// write of key in progress.
  virtual Tensor read(const std::string &key) = 0;
  virtual OffloadStats stats() const = 0;
  /// Called by store() on the caller's thread before it replaces key's
  /// value (null: nothing). An asynchronous checkpoint holds it there until
  /// its writer has read the old value, which it may do with read() from
  /// its own thread meanwhile (the hook keeps the two off one key).
  void setBeforeStore(std::function<void(const std::string &key)> hook) {
    beforeStore_ = std::move(hook);
  }

protected:
  std::function<void(const std::string &)> beforeStore_;
};

/// A rank's store for the offloaded arguments of a step (ArgSpec::offload,
/// one tier per step): host memory for "cpu", files in DIR/rank-R for
/// "nvme" (`directory`: --offload-dir). nullopt when nothing is offloaded.
/// Throws Error naming the flag for nvme without a directory, or a
/// directory without nvme (an option that would do nothing).
std::optional<OffloadOptions>
offloadOptionsFor(const std::vector<ArgSpec> &args,
                  const std::string &directory, int64_t rank);


} // namespace rtxrt

#endif // RTXRT_OFFLOADSTORE_H
