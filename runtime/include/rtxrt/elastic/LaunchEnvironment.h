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
// rtxrt::Error naming the variable, never a default.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LAUNCHENVIRONMENT_H
#define RTXRT_LAUNCHENVIRONMENT_H

#include <cstdint>
#include <functional>
#include <string>
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

} // namespace rtxrt

#endif // RTXRT_LAUNCHENVIRONMENT_H
