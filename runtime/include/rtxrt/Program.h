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

#include "rtxrt/Arguments.h"
#include "rtxrt/Block.h"
#include "rtxrt/Kernels.h"
#include "rtxrt/MeshLayout.h"

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {

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
  /// True when the collectives below take GPU tensors (NCCL); otherwise the
  /// caller stages GPU tensors through host memory.
  virtual bool takesGpuTensors() const { return false; }

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
};

/// What the emitted step function sees: its rank and the collectives.
class StepContext {
public:
  StepContext(int64_t rank, const MeshLayout &mesh, Communicator &comm,
              const DeviceRuntime *device = nullptr);
  ~StepContext();
  using Axes = std::vector<std::string>;

  /// rtx.all_reduce_start / rtx.wait: the all-reduce runs on this context's
  /// communication thread while the step computes on; wait() returns its
  /// result (or rethrows its error). Started collectives run in program
  /// order, and every synchronous collective first waits for them, so each
  /// process group is used by one thread at a time and every rank issues
  /// the same sequence. GPU tensors are reduced at start (NCCL orders them
  /// on the device stream itself).
  using Pending = std::shared_future<Tensor>;
  Pending allReduceStart(const char *what, const Axes &axes, ReduceKind kind,
                         const Tensor &t);
  Tensor wait(const Pending &pending);
  /// Waits until every started collective has finished (the end of a step).
  void drain();
  Tensor allReduce(const char *what, const Axes &axes, ReduceKind kind,
                   const Tensor &t);
  Tensor allGather(const char *what, const Axes &axes, int64_t dim,
                   const Tensor &t);
  Tensor reduceScatter(const char *what, const Axes &axes, ReduceKind kind,
                       int64_t dim, const Tensor &t);
  Tensor allToAll(const char *what, const Axes &axes, int64_t splitDim,
                  int64_t concatDim, const Tensor &t);
  Tensor broadcastFrom(const char *what, const Axes &axes, int64_t root,
                       const Tensor &t);
  Tensor permute(const char *what, const Axes &axes,
                 const std::vector<int64_t> &pairs, const Tensor &t);
  Tensor meshSlice(const Axes &axes, int64_t dim, const Tensor &t);
  /// Seconds this thread has waited in collectives (synchronous ones, and
  /// wait()/drain() on started ones) since the last call; resets the count.
  /// Started all-reduces that finish while the step computes cost nothing
  /// here: this is the communication the step did not overlap.
  double takeCollectiveSeconds() {
    double seconds = collectiveSeconds_;
    collectiveSeconds_ = 0;
    return seconds;
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
  int64_t rank_;
  const MeshLayout &mesh_;
  Communicator &comm_;
  const DeviceRuntime *device_;
  struct AsyncQueue;
  std::unique_ptr<AsyncQueue> async_;
  double collectiveSeconds_ = 0;
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
  std::function<std::vector<Tensor>(StepContext &, const std::vector<Tensor> &)>
      step;
  /// Set by GPU programs: arguments live on the device during the steps.
  const DeviceRuntime *device = nullptr;
};

/// The program's main: parses the command line (--help lists it), runs, and
/// returns the exit status.
int runProgram(const ProgramSpec &spec, int argc, char **argv);

} // namespace rtxrt

#endif // RTXRT_PROGRAM_H
