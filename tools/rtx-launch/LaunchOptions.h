//===- LaunchOptions.h - rtx-launch's command line --------------*- C++ -*-===//
//
// What rtx-launch was asked to do, parsed and checked: every refusal names
// the flag and why (usage() prints the help and exits 2). Each option is
// declared once, in a table (LaunchOptions.cpp) that parses and checks its
// value and prints its help; the rules that tie options together are a
// table too.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_LAUNCHOPTIONS_H
#define RTX_TOOLS_RTX_LAUNCH_LAUNCHOPTIONS_H

#include "Replan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rtxlaunch {

struct Options {
  int ranks = 0;
  int nodes = 0, nodeRank = -1; // 0 / -1: from the environment
  std::string store;
  std::string devices;
  std::string runId;
  std::string trace, traceSteps;
  double graceSeconds = 5.0;
  /// Elastic restarts (docs/launch.md, "Restarts"): after a rank fails, the
  /// ranks are started again with --resume, at most maxRestarts times in
  /// restartWindow seconds; with minRanks, each restart has one rank fewer
  /// (down to minRanks) and "{world}" in the program's arguments names the
  /// program built for that many.
  int maxRestarts = 0;
  double restartWindow = 600;
  int minRanks = 0;
  /// Growing back: a round that runs fewer than N ranks is pre-empted
  /// (SIGTERM: the ranks commit a checkpoint at a step boundary and exit 0)
  /// after this many seconds and started again with one rank more; the slot
  /// that failed is taken to be back by then. Negative: never.
  double growAfter = -1;
  /// --replan MODEL.mlir: the program of another world size is planned
  /// and built at the restart that needs it (Replan.h).
  rtxlaunch::ReplanOptions replan;
  /// --recover in-job: a lost rank is replaced while the others keep their
  /// processes and state (rtxrt/elastic/EpochBoard.h); ranks that lost a peer
  /// and reported it within recoverWindow seconds are survivors.
  bool inJob = false;
  double recoverWindow = 3;
  /// Offers of ranks (rtx-launch --join K, through the store): a job below
  /// maxRanks (default: -n) grows by the ranks offered, at a step boundary.
  int maxRanks = 0;
  /// Several nodes that shrink and grow by nodes (--min-nodes K): a restart
  /// round waits up to nodeWait seconds for every node's agent, then runs
  /// on those that came, if at least K; a node back later joins at the
  /// members' next step boundary.
  int minNodes = 0;
  double nodeWait = 10;
  bool nodeWaitGiven = false;
  /// --join K: this launcher only offers K ranks to the job --run-id.
  int join = 0;
  std::vector<std::string> program;
};

/// Prints `error` (if any) and the help, and exits 2.
[[noreturn]] void usage(const std::string &error);

/// The command line, checked; refusals go through usage().
Options parse(int argc, char **argv);

/// The checks that need the number of nodes, which may come from the
/// outer launcher's environment (Slurm, mpirun) rather than --nnodes.
void checkNodes(const Options &options, int64_t nodes);

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_LAUNCHOPTIONS_H
