//===- InProcessCommunicator.h - ranks as threads of one process -*- C++
//-*-===//
//
// The process groups of rtx-run: N ranks that are threads of one process
// exchange tensors through shared memory. Each rank holds a Communicator
// (the interface emitted programs' Gloo and NCCL groups implement), so the
// reference executor reaches its collectives through the same StepContext
// as the programs do.
//
// A collective is a rendezvous of its group; point-to-point messages go
// through mailboxes. One mutex guards all state, which makes deadlock
// detection exact: when every unfinished rank waits on something no other
// rank can provide, the world reports who waits on what, instead of
// hanging. Because of that, a rank must reach the world from one thread at
// a time (rtx-run's interpreter completes started operations eagerly).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_COMM_INPROCESSCOMMUNICATOR_H
#define RTXRT_COMM_INPROCESSCOMMUNICATOR_H

#include "rtxrt/comm/Communicator.h"
#include "rtxrt/core/Tensor.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace rtxrt {

/// What the ranks of one process share: rendezvous slots and mailboxes.
class InProcessWorld {
public:
  InProcessWorld(int64_t numRanks, double timeoutSeconds);

  int64_t numRanks() const { return numRanks_; }

  /// The communicator through which `rank` reaches the others; it refers to
  /// this world, which must outlive it.
  std::unique_ptr<Communicator> communicator(int64_t rank);

  /// Every rank of `group` (ranks in group order, including `rank`) calls
  /// this with its input; each gets all inputs in group order. Ranks that
  /// meet with different `signature`s are reported as a mismatch. `where`
  /// names the op (and its location) in deadlock reports.
  std::vector<Tensor> exchange(int64_t rank, const std::vector<int64_t> &group,
                               const std::string &signature,
                               const Tensor &input, const std::string &where);

  /// Buffered send: never blocks.
  void send(int64_t from, int64_t to, int64_t tag, const Tensor &value);
  /// Blocks until a message from `from` with `tag` arrives.
  Tensor recv(int64_t rank, int64_t from, int64_t tag,
              const std::string &where);

  /// The rank finished its program: others may not wait for it any more.
  void finish(int64_t rank);
  /// The rank failed: every waiting rank stops with an error naming it.
  void abort(int64_t rank, const std::string &message);

private:
  using Lock = std::unique_lock<std::mutex>;
  /// Waits under `lock` until `ready()` holds; throws on abort or deadlock.
  void waitFor(Lock &lock, int64_t rank, const std::string &where,
               std::function<bool()> ready);
  /// Stops every rank with `message`. Caller holds the lock.
  [[noreturn]] void fail(const std::string &message);
  /// True when no unfinished rank can make progress. Caller holds the lock.
  bool isDeadlocked() const;
  std::string describeWaiters() const;

  struct Slot {
    std::string signature;
    std::string firstWhere;
    std::vector<Tensor> inputs;
    int64_t arrived = 0;
    int64_t departed = 0;
  };

  int64_t numRanks_;
  std::chrono::duration<double> timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  /// Rendezvous slots by (group, sequence number within the group).
  std::map<std::pair<std::vector<int64_t>, int64_t>, Slot> slots_;
  /// Per rank, per group: how many collectives it has entered.
  std::vector<std::map<std::vector<int64_t>, int64_t>> sequence_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Tensor>>
      mailboxes_;
  /// What each rank waits for (empty when running) and its readiness test.
  std::vector<std::string> waitingOn_;
  std::vector<std::function<bool()>> readiness_;
  std::vector<bool> finished_;
  bool aborted_ = false;
  std::string abortMessage_;
};

} // namespace rtxrt

#endif // RTXRT_COMM_INPROCESSCOMMUNICATOR_H
