//===- LaunchEnvironment.h - which launcher started this process -*- C++
//-*-===//
//
// One function decides where a process stands among the ranks from the
// variables its launcher set: rtx-launch and torchrun (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT), Slurm's srun (SLURM_*)
// and Open MPI's mpirun (OMPI_COMM_WORLD_*). Emitted programs read it for
// their rank, their device and their store; rtx-launch reads the node part
// (readNodePlacement) when one rtx-launch runs per node. A value that is not
// a number, or that contradicts another (a rank outside its world), is an
// rtxrt::Error naming the variable, never a default. What rtx-launch hands
// its programs is one documented struct, LaunchHandoff.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LAUNCHENVIRONMENT_H
#define RTXRT_LAUNCHENVIRONMENT_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rtxrt {

/// Reads one environment variable: its value, or null when unset. Tests pass
/// a map; programs pass processEnvironment().
using EnvironmentLookup = std::function<const char *(const std::string &)>;
EnvironmentLookup processEnvironment();

/// A device a rank runs on, from RTX_DEVICE or RTX_DEVICES.
struct DeviceChoice {
  bool listed = false; // false: none named, the rank's local index is used
  std::string kind;    // "cpu" or "cuda"
  int64_t index = 0;   // the CUDA device (cuda:N); the local rank otherwise
  std::string name;    // as written ("cuda:3"), for messages
  std::string source;  // "RTX_DEVICES" or "RTX_DEVICE"
};

struct LaunchEnvironment {
  /// Whose variables these are: "rtx-launch", "torchrun", "slurm",
  /// "mpirun", "RANK/WORLD_SIZE" (set by hand or another tool), or "none"
  /// (a single process).
  std::string launcher = "none";
  int64_t rank = 0, world = 1;
  int64_t localRank = 0;
  /// Ranks on this node; -1 when the launcher does not say.
  int64_t localWorld = -1;
  /// This node and the number of nodes; nodes is -1 when unknown.
  int64_t node = 0, nodes = -1;
  /// torchrun's MASTER_ADDR/MASTER_PORT, or Slurm's first host of
  /// SLURM_JOB_NODELIST (masterPort 0: none).
  std::string masterAddr;
  int64_t masterPort = 0;
  /// The rendezvous store (file:DIR or redis://HOST:PORT) and the variable
  /// it came from; empty when the environment defines none.
  std::string store, storeSource;
  /// An id that every rank of this run shares and no other run has
  /// (RTX_RUN_ID, else derived from the launcher's job id); empty: none.
  std::string runId;
  DeviceChoice device;

  /// The run id that prefixes this run's keys in the rendezvous store:
  /// runId, or "default" when the launcher gave none.
  std::string storeRunId() const { return runId.empty() ? "default" : runId; }

  /// Whether every rank runs on this node (then loopback connects them).
  bool singleNode() const {
    return world == 1 || (localWorld >= 0 && localWorld == world) || nodes == 1;
  }
  /// "torchrun: rank 0 of 2 (local 0 of 2), store file:... (RTX_STORE)".
  std::string describe() const;
};

/// Reads the launch environment; throws rtxrt::Error naming the variable
/// when a value is malformed or inconsistent.
LaunchEnvironment readLaunchEnvironment(const EnvironmentLookup &env);

/// Expands a Slurm host list: "node[01-03,07],gpu5" -> node01, node02,
/// node03, node07, gpu5. Throws rtxrt::Error on a malformed list.
std::vector<std::string> expandHostList(const std::string &list);

/// For a launcher that starts one node's ranks (rtx-launch): this node's
/// index and the number of nodes, from torchrun-style NODE_RANK/NNODES,
/// Slurm (SLURM_NODEID, SLURM_NNODES) or mpirun started with one process per
/// node (OMPI_COMM_WORLD_RANK/SIZE); {0, 1} when none is set.
struct NodePlacement {
  int64_t node = 0, nodes = 1;
  std::string source; // the variables read, for messages; empty: none
};
NodePlacement readNodePlacement(const EnvironmentLookup &env);

/// What rtx-launch hands each program it starts: the one channel from the
/// launcher to a rank, as environment variables (torchrun's names where
/// torchrun has one, so that a program runs alike under either). The
/// launcher fills one of these per rank and turns it into the child's
/// environment in one place (variables()); a program reads it back in one
/// place (readLaunchHandoff). docs/launch.md, "What a rank is handed",
/// lists the same table.
///
///   RANK               rank             this rank, 0 .. WORLD_SIZE - 1
///   WORLD_SIZE         world            ranks in the job (every node)
///   LOCAL_RANK         localRank        this rank's index on its node
///   LOCAL_WORLD_SIZE   localWorld       ranks on this node
///   RTX_RESTART_ROUND  restartRound     the restart round the rank runs in
///                                       (0: the first start)
///   RTX_RECOVER        inJob            "in-job" (--recover in-job), else
///                                       not set
///   RTX_RECOVER_EPOCH  recoverEpoch     in-job recovery's epoch to join (0:
///                                       the first rendezvous); with "in-job"
///   RTX_STORE          store            the rendezvous store (--store); not
///                                       set without one
///   RTX_DEVICES        devices          the devices, one per local rank
///                                       (--devices); not set without
///   RTX_LAUNCHER       launcher         "rtx-launch": which launcher set RANK
///   RTX_TRACE          trace            the trace directory (--trace)
///   RTX_TRACE_STEPS    traceSteps       the traced steps A:B, with RTX_TRACE
///   RTX_RUN_ID         runId            the id of this round's rendezvous
///
/// A variable the launcher does not set keeps the value the launcher itself
/// was started with (an outer launcher's NODE_RANK etc. stay too).
struct LaunchHandoff {
  int64_t rank = 0, world = 1;
  int64_t localRank = 0, localWorld = 1;
  int64_t restartRound = 0;
  bool inJob = false;
  int64_t recoverEpoch = 0;
  std::string store;
  std::string devices;
  std::string launcher = "rtx-launch";
  std::string trace, traceSteps;
  std::string runId;

  /// The variables to set in the child, (name, value), in the table's
  /// order; those left unset (above) are not listed.
  std::vector<std::pair<std::string, std::string>> variables() const;
};

/// The handoff as a program reads it back; variables not set keep the
/// defaults above. Throws rtxrt::Error naming the variable when a value is
/// malformed (RTX_RECOVER other than in-job or restart, a number that is
/// none).
LaunchHandoff readLaunchHandoff(const EnvironmentLookup &env);

} // namespace rtxrt

#endif // RTXRT_LAUNCHENVIRONMENT_H
