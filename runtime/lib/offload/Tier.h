//===- Tier.h - where offloaded values live and how bytes move --*- C++ -*-===//
//
// The offload store (rtxrt/offload/OffloadStore.h) owns what every tier shares: the
// keys, the K slots in flight, the order of transfers of one key, the first
// failure and the statistics. A Tier owns the rest: where a key's value
// lives (HostTier: host memory; FileTier: one file per key) and how its bytes
// move, now on the caller's thread (put(), read()) or later on the tier's
// own thread (fetch(), store()).
//
// Locking. The store calls place(), stage() and start() under its lock, and
// moveNow() without it for an entry with no transfer in flight. A tier's
// thread calls Done without holding any lock of the tier's.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_TIER_H
#define RTXRT_OFFLOAD_TIER_H

#include "Transfer.h"

#include "rtxrt/offload/OffloadStore.h"

#include <functional>
#include <memory>
#include <string>

namespace rtxrt::offload {

class Tier {
public:
  /// How an asynchronous transfer ends, on the tier's thread: 0, an errno
  /// or kShortFile. The tier is done with t (its file is closed, a read's
  /// bytes are in t.tensor); the store owns it again.
  using Done = std::function<void(Transfer *t, int error)>;

  /// Ends the tier's thread; the store has waited for every transfer.
  virtual ~Tier();

  /// put(): gives `key`'s entry, whose size is set, a place for its value,
  /// or a new one of the new size. Throws Error (two keys that would share
  /// a file, no memory).
  virtual void place(const std::string &key, Entry &e) = 0;
  /// Before t moves: a tier whose transfers go through a buffer of its own
  /// (O_DIRECT's aligned staging) sets t.staging, t.data and t.size, and
  /// takes a write's bytes out of t.tensor.
  virtual void stage(Transfer &t) { (void)t; }
  /// Moves t on the caller's thread (put() writes, read() reads); 0 or an
  /// error. A write replaces the whole value.
  virtual int moveNow(Transfer &t) = 0;
  /// Starts t (fetch(), store()); its Done comes later on the tier's
  /// thread. An error that keeps it from starting (a file that cannot be
  /// opened) is returned instead, and no Done comes.
  virtual int start(Transfer &t) = 0;
  /// Where e's value is, for messages: "host memory" or the file's path.
  virtual std::string where(const Entry &e) const = 0;
  /// Fills what only the tier knows (O_DIRECT, io_uring).
  virtual void describe(OffloadStats &stats) const { (void)stats; }
};

/// Moves started transfers on a thread of its own and ends each with its
/// tier's Done: WorkerThread (blocking calls) or UringQueue (io_uring).
class TransferThread {
public:
  /// Ends the thread; every transfer has ended.
  virtual ~TransferThread();
  /// Starts t; 0, or an errno when it could not start (then no Done comes).
  virtual int start(Transfer &t) = 0;
};

/// The tier `options` asks for: the only place that looks at its kind.
/// Throws Error for a files tier without a usable directory.
std::unique_ptr<Tier> makeTier(const OffloadOptions &options, Tier::Done done);

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_TIER_H
