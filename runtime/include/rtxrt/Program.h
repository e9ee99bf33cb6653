//===- Program.h - the runtime of emitted training programs -----*- C++ -*-===//
//
// A program emitted by rtx-translate is a step function plus a description
// of its arguments and results (ProgramSpec); runProgram() does the rest:
// reads the rank from the launcher's environment, rendezvouses and creates
// the process groups, initialises parameters exactly as rtx-run does (same
// counter-based generator and block offsets, rtxrt/Arguments.h), reads or
// draws the data, runs the steps with a progress line on rank 0, and writes
// the final results and state on request. Its parts live in
// runtime/lib/program/, one purpose each.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_H
#define RTXRT_PROGRAM_H

#include "rtxrt/AllocatorStats.h"
#include "rtxrt/Arguments.h"
#include "rtxrt/Block.h"
#include "rtxrt/Kernels.h"
#include "rtxrt/MeshLayout.h"
#include "rtxrt/Trace.h"

#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rtxrt {

class OffloadStore;

/// A collective as the dialect's op describes it: rtx-translate writes one
/// per op (`Collective::allGather(1)`), rtx-run reads the same attributes.
struct Collective {
  enum class Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    BroadcastFrom,
    Permute
  };
  Kind kind = Kind::AllReduce;
  ReduceKind reduce = ReduceKind::Sum;
  /// The gathered, scattered or (all-to-all) split dimension.
  int64_t dim = 0;
  /// All-to-all's concatenated dimension.
  int64_t concatDim = 0;
  /// Broadcast's root, a group rank.
  int64_t root = 0;
  /// Permute's source -> target group ranks, flat.
  std::vector<int64_t> pairs;

  static Collective allReduce(ReduceKind reduce);
  static Collective allGather(int64_t dim);
  static Collective reduceScatter(ReduceKind reduce, int64_t dim);
  static Collective allToAll(int64_t splitDim, int64_t concatDim);
  static Collective broadcastFrom(int64_t root);
  static Collective permute(std::vector<int64_t> pairs);
  /// "all_gather", as in the dialect's op names.
  const char *name() const;
};

/// The completion of a started operation: get() waits and returns its
/// result (an undefined Tensor for a send), or rethrows its error.
using Completion = std::shared_future<Tensor>;
/// A completion that is already there.
Completion completed(Tensor value);

/// A collective or message that failed because a peer died, hung or was cut
/// off (its connection closed, or the timeout passed), as opposed to a bad
/// call. In-job recovery (rtxrt/RecoveryBoard.h) catches exactly this.
class CommunicationError : public Error {
public:
  using Error::Error;
};

/// Exchanges tensors between the ranks of groups. Collectives are computed
/// from the exchanged inputs (rtxrt/Collectives.h) unless a backend computes
/// them itself (a ring all-reduce, NCCL on the GPU).
///
/// In every call `group` lists global ranks in group order, including this
/// one, `index` is this rank's position in it, and `what` names the op for
/// error messages. Every rank of the group makes the same call.
class Communicator {
public:
  virtual ~Communicator() = default;
  /// Each rank of `group` passes a tensor of the same shape and receives all
  /// of them in group order. Host tensors only.
  virtual std::vector<Tensor> exchange(const std::vector<int64_t> &group,
                                       const Tensor &input,
                                       const std::string &what) = 0;
  /// The elementwise sum over `group` with a bandwidth-optimal algorithm
  /// (a ring), when the backend has one for this dtype; an undefined Tensor
  /// otherwise (the caller then exchanges and adds). Every rank gets the
  /// same result.
  virtual Tensor sum(const std::vector<int64_t> & /*group*/,
                     const Tensor & /*input*/, const std::string & /*what*/) {
    return Tensor();
  }
  /// Every rank's `input` back to back in group order, as one tensor of
  /// shape [n, input's shape...] written straight by the backend, when it
  /// can (Gloo's all-gather); an undefined Tensor otherwise (the caller
  /// then exchanges and concatenates, which holds n copies more).
  virtual Tensor gather(const std::vector<int64_t> & /*group*/,
                        const Tensor & /*input*/,
                        const std::string & /*what*/) {
    return Tensor();
  }
  /// True when the collectives below take GPU tensors (NCCL); otherwise the
  /// caller stages GPU tensors through host memory.
  virtual bool takesGpuTensors() const { return false; }
  /// How long a collective from now on may wait for its peers, in seconds.
  /// The communicator is created with the rendezvous timeout (ranks may
  /// start seconds apart on a loaded machine); the steps then run under
  /// --timeout, which --timeout auto sizes to the step time.
  virtual void setTimeout(double /*seconds*/) {}
  /// How this backend computes `collective` on `dtype`, for traces
  /// ("gloo ring", "exchange").
  virtual const char *algorithm(const Collective & /*collective*/,
                                DType /*dtype*/) const {
    return "exchange";
  }

  /// Runs `collective` (dispatches to the methods below).
  Tensor run(const Collective &collective, const std::vector<int64_t> &group,
             int64_t index, const Tensor &input, const std::string &what);
  /// Starts `collective` so that it overlaps the caller's work, when the
  /// backend can do so itself (NCCL: on its communication stream, ordered
  /// by CUDA events); an invalid Completion otherwise, and the caller runs
  /// it on a communication thread.
  virtual Completion start(const Collective & /*collective*/,
                           const std::vector<int64_t> & /*group*/,
                           int64_t /*index*/, const Tensor & /*input*/,
                           const std::string & /*what*/) {
    return Completion();
  }

  // The collectives of rtx's distribution ops. The defaults exchange and
  // combine on the host.
  virtual Tensor allReduce(const std::vector<int64_t> &group, int64_t index,
                           ReduceKind kind, const Tensor &input,
                           const std::string &what);
  virtual Tensor allGather(const std::vector<int64_t> &group, int64_t index,
                           int64_t dim, const Tensor &input,
                           const std::string &what);
  virtual Tensor reduceScatter(const std::vector<int64_t> &group, int64_t index,
                               ReduceKind kind, int64_t dim,
                               const Tensor &input, const std::string &what);
  virtual Tensor allToAll(const std::vector<int64_t> &group, int64_t index,
                          int64_t splitDim, int64_t concatDim,
                          const Tensor &input, const std::string &what);
  virtual Tensor broadcastFrom(const std::vector<int64_t> &group, int64_t index,
                               int64_t root, const Tensor &input,
                               const std::string &what);
  virtual Tensor permute(const std::vector<int64_t> &group, int64_t index,
                         const std::vector<int64_t> &pairs, const Tensor &input,
                         const std::string &what);

  /// Point to point (rtx.send / rtx.recv): posts a send of `input` to group
  /// rank `peer` under `tag` and returns at once; the completion is there
  /// when `input` may be reused. Sends are eager, as in rtx-run: a send
  /// never waits for its receive to be posted before the caller goes on.
  /// Messages between two ranks with the same tag arrive in the order they
  /// were sent.
  virtual Completion send(const std::vector<int64_t> &group, int64_t index,
                          int64_t peer, int64_t tag, const Tensor &input,
                          const std::string &what);
  /// Posts the receive of a tensor of `shape` and `dtype` from group rank
  /// `peer` under `tag`; the completion yields it.
  virtual Completion recv(const std::vector<int64_t> &group, int64_t index,
                          int64_t peer, int64_t tag, const Shape &shape,
                          DType dtype, const std::string &what);
  /// True when send() and recv() carry a rank's messages to itself (the
  /// in-process world's mailboxes, whose waits its deadlock detection
  /// sees); otherwise StepContext queues them itself.
  virtual bool messagesToSelf() const { return false; }
};

/// The device half of an emitted GPU program (rtxrt::gpu::deviceRuntime()).
/// Host programs have none.
struct DeviceRuntime {
  const char *name = "";
  std::function<std::string(int64_t localRank)> selectDevice;
  std::function<Tensor(const Tensor &)> toDevice, toHost;
  /// Waits until the device has finished all queued work (step timing:
  /// kernels run asynchronously, after the step function has returned).
  std::function<void()> synchronize;
  /// The device allocator's counters (peak bytes, fragmentation, failed
  /// allocations: the run's metrics).
  std::function<AllocatorStats()> allocatorStats;
  /// Starts its peak window (a step's peak, step_peak_bytes).
  std::function<void()> beginPeakWindow;
  /// Piece `index` of n along `dim`, on the device (rtx.mesh_slice).
  std::function<Tensor(const Tensor &, int64_t dim, int64_t n, int64_t index)>
      sliceGroup;
  /// Device process groups (NCCL); null when this build has none, and then
  /// Gloo's host process groups serve through host memory.
  std::function<std::unique_ptr<Communicator>(
      int64_t rank, int64_t size, const std::string &store,
      const std::vector<std::vector<int64_t>> &groups, double timeoutSeconds)>
      makeCommunicator;
};

/// One process, one rank: exchanges return the input.
std::unique_ptr<Communicator> makeLocalCommunicator();
/// Gloo over TCP, rendezvous through a FileStore (`file:DIR`). Contexts for
/// `groups` (each a list of global ranks) are created eagerly, in order.
/// Throws Error when Gloo support was not built.
std::unique_ptr<Communicator>
makeGlooCommunicator(int64_t rank, int64_t size, const std::string &store,
                     const std::vector<std::vector<int64_t>> &groups,
                     double timeoutSeconds);

struct ResultSpec {
  std::string state; // the state key it carries to the next step, or ""
  Shape shape;       // local shape
  Sharding sharding;
  DType dtype = DType::F32;
  /// Its index among the step's results (rtx.step_result), or -1 for its
  /// position.
  int64_t index = -1;
  /// A flat buffer (rtx-shard-state): written as its members, each a result
  /// of its own with its own index and state key.
  FlatLayout flat;
  std::vector<ResultSpec> members;
  /// "cpu" or "nvme": the step writes it back to the offload tier and
  /// returns a reference; the run reads its value from the tier at the end.
  std::string offload;
};

/// What a step's communication did (the run's metrics,
/// docs/observability.md).
struct CommunicationStats {
  /// Time the step's thread waited for communication: synchronous
  /// collectives, and waits for started ones that had not finished.
  double exposedSeconds = 0;
  /// The part of it spent on all-reduces.
  double exposedAllReduceSeconds = 0;
  /// Time collectives ran: a synchronous one's whole time, a started one's
  /// time on the communication thread. busy - exposed is what overlapped.
  double busySeconds = 0;
  /// Bus bytes of the collectives that ran, nccl-tests' definition (an
  /// all-reduce of S bytes on n ranks: 2S(n-1)/n): over busySeconds, the
  /// achieved bus bandwidth.
  double busBytes = 0;
  int64_t collectives = 0;
  CommunicationStats &operator+=(const CommunicationStats &o);
};

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
  /// An emitted op's span: opBegin() before its statement, opEnd() after.
  void opBegin() {
    if (tracer_ && tracer_->active())
      opStart_ = Tracer::now();
  }
  void opEnd(const OpInfo &op) {
    if (tracer_ && tracer_->active())
      tracer_->opSpan(op, opStart_, Tracer::now());
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
  int64_t opStart_ = 0;
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

using StepFunction = std::function<std::vector<Tensor>(
    StepContext &, const std::vector<Tensor> &)>;

/// What the ranks of one pipeline coordinate run (rtx-pipeline made one
/// function per coordinate; docs/pipeline.md).
struct PipelineStage {
  std::vector<ArgSpec> args;
  std::vector<ResultSpec> results;
  /// Per result: its index among the step's results (ProgramSpec::results).
  std::vector<int64_t> stepResult;
  int64_t lossResult = -1;
  StepFunction step;
  /// Offload slots the stage's step needs (mlir::rtx::offloadSlots).
  int64_t offloadSlots = 0;
};

/// What an emitted program tells runProgram about itself.
struct ProgramSpec {
  std::string name;
  MeshLayout mesh;
  std::vector<ArgSpec> args;
  std::vector<ResultSpec> results;
  int64_t lossResult = -1;
  /// Every axis list a collective of the step uses (the groups to create).
  std::vector<std::vector<std::string>> collectiveAxes;
  StepFunction step;
  /// rtx-shard-state{offload}: the most offload buffers the step holds in
  /// flight (fetched or being written) by its own order; the store bounds
  /// them by this (mlir::rtx::offloadSlots). 0: nothing is offloaded.
  int64_t offloadSlots = 0;
  /// Set by GPU programs: arguments live on the device during the steps.
  const DeviceRuntime *device = nullptr;
  /// A pipelined program: the ranks whose coordinate on `pipelineAxis` is c
  /// run stages[c]; `results` and `lossResult` are then the whole step's,
  /// each held by the first coordinate that returns it, and `args` and
  /// `step` are unused. runProgram turns it into each rank's own view
  /// (`stage` >= 0: the coordinate; args, results, lossResult and step
  /// its stage's; stepResults the step's).
  std::string pipelineAxis;
  std::vector<PipelineStage> stages;
  int64_t stage = -1;
  std::vector<ResultSpec> stepResults;
  int64_t stepLossResult = -1; // the loss's index in stepResults
  int64_t stepLossOwner = -1;  // the coordinate that returns the loss
  /// The first coordinate that returns the step's result `i`.
  int64_t ownerOf(int64_t i) const {
    for (size_t c = 0; c < stages.size(); ++c)
      for (int64_t r : stages[c].stepResult)
        if (r == i)
          return c;
    return -1;
  }
};

/// The program's main: parses the command line (--help lists it), runs, and
/// returns the exit status.
int runProgram(const ProgramSpec &spec, int argc, char **argv);

} // namespace rtxrt

#endif // RTXRT_PROGRAM_H
