//===- rtx-launch.cpp - start the ranks of a training program -------------===//
//
//   rtx-launch -n N [--nnodes M --node-rank I]
//              [--store file:DIR | redis://HOST:PORT] [--devices LIST]
//              [--run-id ID] [--grace S] [--trace DIR [--trace-steps A:B]]
//              [restarts, in-job recovery, growth: rtx-launch --help]
//              -- PROGRAM ARGS...
//
// Spawns N local ranks of PROGRAM with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE and RTX_STORE set, prefixes every line they print with
// their rank, forwards SIGINT/SIGTERM to them, and, when a rank fails, stops
// the others promptly and exits with that rank's status. With several nodes
// (one rtx-launch per node), this node's index and the number of nodes come
// from --node-rank/--nnodes, else from the variables of the launcher that
// started rtx-launch (rtxrt::readNodePlacement: NODE_RANK/NNODES, Slurm's
// SLURM_NODEID/SLURM_NNODES, mpirun's rank with one rtx-launch per node).
//
// No existing tool fits: torchrun is Python and not packaged without
// PyTorch's launcher; mpirun needs MPI in the program. This is a small POSIX
// process supervisor.
//
// The parts, each in its own file with the state it owns:
//   LaunchOptions  the command line, declared once as a table
//   Launcher       the restart policy over rounds (RestartPolicy: the budget)
//   LocalRound     supervising one round of this node's ranks (RankStarter:
//                  one rank, handed its place as an rtxrt::LaunchHandoff)
//   InJobAgent     in-job recovery: epochs and loss settlement across nodes
//   NodeRounds     restart rounds across nodes: shrink and rejoin by nodes
//   Growth         offers of ranks (--join) that grow a job
//   Replan         the program of another world size
//
//===----------------------------------------------------------------------===//

#include "Growth.h"
#include "LaunchOptions.h"
#include "Launcher.h"
#include "LauncherProcess.h"

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/core/Tensor.h"

using namespace rtxlaunch;

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  // A node offers ranks to a running job (it grows at a step boundary).
  if (options.join > 0)
    return Growth::offer(options);

  // One launcher per node: place this node's ranks after those of the nodes
  // before it.
  int64_t node = options.nodeRank, nodes = options.nodes;
  if (options.nodes == 0) {
    try {
      rtxrt::NodePlacement placement =
          rtxrt::readNodePlacement(rtxrt::processEnvironment());
      node = placement.node;
      nodes = placement.nodes;
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  checkNodes(options, nodes);
  forwardSignals();
  RunIds ids = identifyRun(options, nodes);
  Launcher launcher(std::move(options), node, nodes, std::move(ids));
  return launcher.run();
}
