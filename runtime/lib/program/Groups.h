//===- Groups.h - ranks, rendezvous and process groups ----------*- C++ -*-===//
//
// Where this process stands among the ranks (the launcher's environment),
// the device it runs on, and the process groups it joins. Elastic recovery
// (re-forming the groups after a rank fails) belongs here.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_GROUPS_H
#define RTXRT_LIB_PROGRAM_GROUPS_H

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/program/Program.h"
#include "rtxrt/program/PipelineCoordinates.h"

#include <memory>
#include <string>
#include <vector>

namespace rtxrt::detail {
class Liveness;
} // namespace rtxrt::detail

namespace rtxrt::program {

/// This process's rank, from the environment that rtx-launch, torchrun,
/// Slurm and mpirun set (rtxrt/elastic/LaunchEnvironment.h).
struct Placement {
  int64_t rank = 0, world = 1, localRank = 0;
  LaunchEnvironment launch;
};
/// Throws Error naming the variable when the environment is malformed.
Placement placementFromEnvironment();
/// Throws Error unless the world is the size the program was compiled for.
void checkPlacement(const ProgramSpec &spec, const Placement &self);

/// Host or device: where the step's tensors live.
class ProgramDevice {
public:
  /// Selects this rank's device (GPU programs) and names it on rank 0.
  ProgramDevice(const DeviceRuntime *runtime, const Placement &self);
  const DeviceRuntime *runtime() const { return runtime_; }
  Tensor toDevice(const Tensor &t) const {
    return runtime_ ? runtime_->toDevice(t) : t;
  }
  Tensor toHost(const Tensor &t) const {
    return runtime_ ? runtime_->toHost(t) : t;
  }
  /// Waits for the device's queued work.
  void synchronize() const {
    if (runtime_)
      runtime_->synchronize();
  }
  /// Starts the allocators' peak windows (step_peak_bytes): the host's,
  /// and the device's in a GPU program.
  void beginPeakWindow() const {
    beginHostPeakWindow();
    if (runtime_)
      runtime_->beginPeakWindow();
  }

private:
  const DeviceRuntime *runtime_;
};

/// The process groups of a program: every group a collective of the step
/// uses, plus the world (to assemble the loss and results).
class ProcessGroups {
public:
  /// Rendezvous through `rendezvous` (its store, under its run id) and
  /// create every group eagerly,
  /// in one order on every rank, within `rendezvousSeconds`. One rank needs
  /// no store. Heartbeats are paced by `heartbeatBasis`, the shortest
  /// timeout the collectives will have (comm/Liveness.h).
  ProcessGroups(const ProgramSpec &spec, const Placement &self,
                const ProgramDevice &device, const Rendezvous &rendezvous,
                double rendezvousSeconds, double heartbeatBasis);
  ~ProcessGroups();
  Communicator &communicator() { return *comm_; }
  /// This rank finished `steps` steps: its heartbeat says so, and a peer
  /// whose collective times out names a rank that is behind
  /// (comm/Liveness.h).
  void markProgress(int64_t steps);
  int64_t rank() const { return rank_; }
  /// This rank's clock against rank 0's (program/ClockSync.h); every rank
  /// calls it.
  ClockOffset measureClockOffset();

  /// The sum of a scalar's canonical replicas over all ranks (the loss of a
  /// step); every rank gets it. In a pipelined program (`owner` >= 0) only
  /// the ranks of pipeline coordinate `owner` hold the value; the others
  /// pass a placeholder of its size.
  double globalScalar(const Tensor &local, const Sharding &sharding,
                      const std::string &what, int64_t owner = -1);
  /// The global tensor that the ranks' blocks of a value form, on rank 0;
  /// an undefined tensor on the other ranks. Every rank calls it; `owner`
  /// as for globalScalar.
  Tensor gatherOnRankZero(const Tensor &local, const Shape &localShape,
                          const Sharding &sharding, const std::string &what,
                          int64_t owner = -1);
  /// The global value of each member of flat buffer `flat` (rtx-shard-state)
  /// from the ranks' shards `local`, on rank 0; empty on the other ranks.
  /// Every rank calls it; `owner` as for globalScalar.
  std::vector<Tensor> gatherFlatOnRankZero(const Tensor &local,
                                           const ResultSpec &flat,
                                           const std::string &what,
                                           int64_t owner = -1);

  /// Every rank says whether its part of `what` succeeded; every rank gets
  /// the lowest rank whose part failed, or -1 when all succeeded.
  int64_t firstFailedRank(bool ok, const std::string &what);
  /// Every rank's `mine`, by rank (a few flags each; every rank calls it).
  std::vector<int64_t> exchangeFlags(int64_t mine, const std::string &what);
  /// Every rank's `mine`, by rank, bit for bit (hashes).
  std::vector<uint64_t> exchangeWords(uint64_t mine, const std::string &what);
  /// The sum mod 2^64 of every rank's `mine` (hashes), on every rank.
  uint64_t sumOverRanks(uint64_t mine, const std::string &what);

private:
  /// The rank whose place in the mesh `r`'s block of a value describes, or
  /// -1 when `r` holds none (pipelined programs: not the owner coordinate).
  int64_t placeOf(int64_t r, int64_t owner) const {
    return pipeline_.placeOf(r, owner);
  }

  const MeshLayout &mesh_;
  PipelineCoordinates pipeline_;
  const ProgramDevice &device_;
  int64_t rank_;
  std::vector<int64_t> world_;
  std::unique_ptr<detail::Liveness> liveness_;
  std::unique_ptr<Communicator> comm_;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_GROUPS_H
