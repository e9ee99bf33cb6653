//===- Launcher.h - the rounds of this node's ranks -------------*- C++ -*-===//
//
// The restart policy over rounds: the first round, then after each round
// what comes next. A rank failure restarts the ranks with --resume while the
// budget lasts (--max-restarts in --restart-window, with a backoff), one rank
// fewer per restart with --min-ranks; a growth or a shrink starts the next
// round at once, with the ranks the job has then. Each round runs on a
// program for its world (Replan.h when --replan is given), on the nodes of
// the round (NodeRounds with several nodes), supervised by a LocalRound.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_LAUNCHER_H
#define RTX_TOOLS_RTX_LAUNCH_LAUNCHER_H

#include "Growth.h"
#include "LaunchOptions.h"
#include "NodeRounds.h"
#include "RankStarter.h"
#include "RestartPolicy.h"
#include "Round.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rtxlaunch {

/// The ids of a run: `job` names it in the store (offers of ranks, node
/// rounds); `rounds` prefixes each round's rendezvous (a later launch of one
/// node under a given run id meets in rounds of its own).
struct RunIds {
  std::string job, rounds;
};

/// The run's ids for this launch of node `node` of `nodes`; refusals go
/// through usage().
RunIds identifyRun(const Options &options, int64_t nodes);

class Launcher {
public:
  /// Node `node` of `nodes` of run `ids`; refusals (a store out of reach)
  /// go through usage().
  Launcher(Options options, int64_t node, int64_t nodes, RunIds ids);
  Launcher(const Launcher &) = delete;
  Launcher &operator=(const Launcher &) = delete;

  /// Runs the rounds; the launch's exit status.
  int run();

private:
  /// The spec of `round` (its program planned when another world needs
  /// one); nothing after an error, printed.
  std::optional<RoundSpec> specFor(int round);
  /// What follows a round that ended as `end`: whether another starts.
  bool next(const RoundEnd &end, int round);
  /// After a rank failure: whether the budget allows another round, which
  /// it waits for.
  bool restartAfterFailure(int round);
  /// One timeline of the ranks' traces, also after a failure (the trace of
  /// a failed run is the one most worth reading).
  void mergeTraces();

  Options options_;
  /// The agent's own node and the job's nodes; `node_` and `nodes_` are
  /// those of the current round (fewer when the job shrank by nodes).
  const int64_t agentNode_, agentNodes_;
  int64_t node_, nodes_;
  RunIds ids_;
  RankStarter starter_;
  RestartPolicy policy_;
  std::optional<Growth> growth_;
  std::optional<NodeRounds> rounds_;
  int ranks_;
  int exitCode_ = 0;
  std::string lastRunId_;
  int lastRound_ = 0;
  bool member_ = true; ///< this agent's ranks ran in the last round
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_LAUNCHER_H
