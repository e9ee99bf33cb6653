//===- StepContext.h - what the emitted step function sees ------*- C++ -*-===//
//
// Its rank, the collectives over the groups of mesh axes (synchronous and
// started), point to point, the offload tier and trace spans. Emitted
// programs and rtx-run reach their communicator only through it.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_STEPCONTEXT_H
#define RTXRT_PROGRAM_STEPCONTEXT_H

#include "rtxrt/comm/Communicator.h"
#include "rtxrt/core/Block.h"
#include "rtxrt/core/MeshLayout.h"
#include "rtxrt/device/DeviceRuntime.h"
#include "rtxrt/observe/CommunicationStats.h"
#include "rtxrt/observe/Trace.h"
#include "rtxrt/program/OpTiming.h"

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rtxrt {

class OffloadStore;

/// What the emitted step function sees: its rank and the collectives.
class StepContext {
public:
  StepContext(int64_t rank, const MeshLayout &mesh, Communicator &comm,
              const DeviceRuntime *device = nullptr);
  ~StepContext();
  using Axes = std::vector<std::string>;

  /// A synchronous collective over the group of `axes`.
  Tensor collective(const char *what, const Axes &axes,
                    const Collective &collective, const Tensor &t);

  /// rtx.*_start / rtx.wait. A started collective runs while the step
  /// computes on: on the backend's own communication stream when it has
  /// one (NCCL), otherwise on this context's communication thread, which
  /// runs started collectives in program order; every synchronous
  /// collective first waits for them, so each process group is used by one
  /// thread at a time and every rank issues the same sequence. A GPU tensor
  /// staged through host memory is copied to the host at the start (in
  /// program order on the device) and its result copied back at the wait.
  /// wait() returns the result (or rethrows the error); every started
  /// operation must be waited exactly once before the step ends.
  struct Pending {
    Completion completion;
    int64_t id = -1;
    /// An all-reduce's wait counts as all-reduce time.
    bool allReduce = false;
  };
  Pending start(const char *what, const Axes &axes,
                const Collective &collective, const Tensor &t);
  /// rtx.send / rtx.send_start: `peer` is a rank of the group over `axes`.
  /// A synchronous send is eager; it completes by the end of the step.
  void send(const char *what, const Axes &axes, int64_t peer, int64_t tag,
            const Tensor &t);
  Pending sendStart(const char *what, const Axes &axes, int64_t peer,
                    int64_t tag, const Tensor &t);
  /// rtx.recv / rtx.recv_start of a tensor of `shape` and `dtype` (on the
  /// device in a GPU program).
  Tensor recv(const char *what, const Axes &axes, int64_t peer, int64_t tag,
              const Shape &shape, DType dtype);
  Pending recvStart(const char *what, const Axes &axes, int64_t peer,
                    int64_t tag, const Shape &shape, DType dtype);
  Tensor wait(const Pending &pending);
  /// Waits until every started collective has finished (before a
  /// synchronous collective).
  void drain();
  /// The end of a step: drains, completes the synchronous sends, and fails
  /// naming the op when a started operation was never waited.
  void finishStep();
  Tensor meshSlice(const Axes &axes, int64_t dim, const Tensor &t);
  /// rtx.offload_fetch_start: starts reading offloaded buffer `key` from
  /// the store (which may first wait for a slot: backpressure); wait()
  /// yields it, on the device in a GPU program unless `onHost` (only host
  /// updates read it: ZeRO-Offload's CPU optimizer step).
  Pending offloadFetch(const char *what, const char *key, bool onHost = false);
  /// rtx.offload_store: starts writing `t` as `key`'s new value. The step's
  /// end (finishStep) waits for the writes and rethrows a failed one.
  void offloadStore(const char *what, const char *key, const Tensor &t);
  /// The store of offloaded buffers (null: the program offloads nothing).
  void setOffload(OffloadStore *store) { offload_ = store; }
  OffloadStore *offload() const { return offload_; }
  /// What communication did since the last call; resets the counts.
  CommunicationStats takeCommunicationStats();
  /// Records spans into `tracer` from now on (null: none).
  void setTracer(Tracer *tracer) { tracer_ = tracer; }
  Tracer *tracer() const { return tracer_; }
  /// An emitted op's span: opBegin() before its statement, opEnd() after;
  /// timed by the host's clock, or on a GPU by device events (OpTiming.h).
  void opBegin() {
    if (tracer_ && tracer_->active())
      opTiming_.opBegin();
  }
  void opEnd(const OpInfo &op) {
    if (tracer_ && tracer_->active())
      opTiming_.opEnd(*tracer_, op);
  }
  /// The step loop's marks around step `step`'s function: a traced step's
  /// ops are timed (on a GPU, by device events resolved at endOpTiming(),
  /// which comes after the step's synchronisation).
  void beginOpTiming(int64_t step) {
    if (tracingWantsOpTiming(tracer_, step))
      opTiming_.beginStep(*tracer_);
  }
  void endOpTiming() {
    if (tracer_)
      opTiming_.endStep(*tracer_);
  }
  /// A pipeline action begins (`name` like "1F3", a string literal), ending
  /// the one before; null ends the last. Traced as a span around its ops.
  void action(const char *name) {
    if (tracer_ && tracer_->active()) {
      int64_t now = Tracer::now();
      if (action_)
        tracer_->span(TraceLane::Compute, action_, "action", actionStart_, now);
      actionStart_ = now;
    }
    action_ = name;
  }
  /// This rank's index in its group over `axes`, and the group's size.
  int64_t indexInGroup(const Axes &axes) const {
    return mesh_.indexInGroup(rank_, axes);
  }
  int64_t groupSize(const Axes &axes) const { return mesh_.groupSize(axes); }
  /// Where this rank's block of a value with `sharding` sits.
  LocalBlock block(const Sharding &sharding, const Shape &local) const {
    return localBlock(sharding, local, mesh_, rank_);
  }

private:
  /// Calls `collective(group, index, input)` for this rank's group over
  /// `axes`, staging GPU tensors through host memory when the communicator
  /// takes host tensors only.
  template <typename F>
  Tensor run(const Axes &axes, const Tensor &t, F &&collective);
  Pending track(Completion completion, const char *what,
                bool allReduce = false);
  /// Counts (and traces) one collective that ran from `startNs` to `endNs`
  /// on `lane`; may be called from the communication thread.
  void ranCollective(const char *what, const Collective &collective,
                     const std::vector<int64_t> &group, const Tensor &input,
                     int64_t startNs, int64_t endNs, TraceLane lane,
                     int64_t issuedNs);
  /// Counts (and traces, as `name`) a wait of the step's thread for
  /// communication since `startNs`.
  void waited(const char *name, const char *what, int64_t startNs,
              bool allReduce);
  /// Traces a wait of the step's thread for the offload tier since
  /// `startNs` (when it lasted long enough to see).
  void offloadWaited(const char *name, const char *what, int64_t startNs);
  /// A completion of a host tensor that yields it on the device, copied at
  /// the wait on the thread that owns the device.
  Completion toDeviceAtWait(Completion onHost) const;
  /// The group's peer `peer`, checked.
  void checkPeer(const char *what, const Axes &axes, int64_t peer) const;
  int64_t rank_;
  const MeshLayout &mesh_;
  Communicator &comm_;
  const DeviceRuntime *device_;
  struct AsyncQueue;
  std::unique_ptr<AsyncQueue> async_;
  /// Guards stats_ (the communication thread adds its busy time).
  std::mutex statsMutex_;
  CommunicationStats stats_;
  Tracer *tracer_ = nullptr;
  OffloadStore *offload_ = nullptr;
  OpTiming opTiming_;
  const char *action_ = nullptr;
  int64_t actionStart_ = 0;
  int64_t nextId_ = 0;
  /// Started operations not yet waited, by id: what they are.
  std::map<int64_t, std::string> unwaited_;
  /// Synchronous sends, completed by finishStep().
  std::vector<std::pair<std::string, Completion>> sends_;
  /// Messages a rank sent to itself, by tag (process groups have no pair
  /// from a rank to itself).
  std::map<int64_t, std::deque<Tensor>> selfMessages_;
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_STEPCONTEXT_H
