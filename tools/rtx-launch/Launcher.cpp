//===- Launcher.cpp - the rounds of this node's ranks ---------------------===//

#include "Launcher.h"

#include "Children.h"
#include "LaunchOptions.h"
#include "LauncherProcess.h"
#include "LocalRound.h"
#include "Replan.h"

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/core/Tensor.h"
#include "rtxrt/observe/TraceMerge.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

using namespace rtxlaunch;

RunIds rtxlaunch::identifyRun(const Options &options, int64_t nodes) {
  // The run's id prefixes every store key, so ranks of different runs
  // sharing a store never meet. One node makes its own; several nodes must
  // share one: given, or the job id of the launcher that started them.
  std::string runId = options.runId;
  if (runId.empty() && std::getenv("RTX_RUN_ID"))
    runId = std::getenv("RTX_RUN_ID");
  if (runId.empty() && nodes > 1) {
    try {
      runId = rtxrt::readLaunchEnvironment(rtxrt::processEnvironment()).runId;
    } catch (const rtxrt::Error &) {
    }
    if (runId.empty())
      usage("several nodes need one run id: pass --run-id ID (the same on "
            "every node) or set RTX_RUN_ID");
  }
  // A later launch of one node under a run id it was given (a second
  // train call, a restarted launcher) meets in rounds of its own: a file
  // store keeps the keys of the earlier launch's rendezvous, which Gloo
  // refuses to write again. Offers stay under the run id itself.
  RunIds ids{runId, runId};
  if (!runId.empty() && nodes == 1 && !options.store.empty()) {
    try {
      int64_t launch =
          rtxrt::GrowthBoard(options.store, runId).claimLaunch(launcherName());
      if (launch > 0)
        ids.rounds = runId + "-launch" + std::to_string(launch);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  if (runId.empty())
    ids.job = ids.rounds =
        std::to_string(getpid()) + "-" +
        std::to_string(
            std::chrono::system_clock::now().time_since_epoch().count());
  return ids;
}

Launcher::Launcher(Options options, int64_t node, int64_t nodes, RunIds ids)
    : options_(std::move(options)), agentNode_(node), agentNodes_(nodes),
      node_(node), nodes_(nodes), ids_(std::move(ids)), starter_(options_),
      policy_(options_.maxRestarts, options_.restartWindow),
      ranks_(options_.ranks), lastRunId_(ids_.job) {
  try {
    // Offers of ranks (rtx-launch --join) to a job that may grow: under
    // the job's own run id.
    if (!options_.store.empty() &&
        (options_.minRanks > 0 || options_.maxRanks > options_.ranks))
      growth_.emplace(options_, ids_.job);
    // A job of several nodes that restarts (one agent per node).
    if (nodes > 1 && options_.maxRestarts > 0)
      rounds_.emplace(options_, ids_.job, agentNode_, agentNodes_);
  } catch (const rtxrt::Error &error) {
    usage(error.what());
  }
}

int Launcher::run() {
  // Several nodes: this agent starts in the round the others are in (an
  // agent that came back after its node was lost joins them).
  int firstRound = rounds_ ? rounds_->enter(ids_.job) : 0;
  if (firstRound < 0)
    return 1;
  for (int round = firstRound;; ++round) {
    lastRound_ = round;
    if (rounds_ && round > firstRound)
      rounds_->start(round);
    if (options_.minNodes > 0) {
      Seat seat = rounds_->meet(round, ranks_);
      member_ = seat.member.value_or(member_);
      if (seat.kind == Seat::Rejoin)
        continue; // the members start the next round with this node
      if (seat.kind == Seat::Stop) {
        exitCode_ = seat.exitCode;
        break;
      }
      node_ = seat.node;
      nodes_ = seat.nodes;
    }
    std::optional<RoundSpec> spec = specFor(round);
    if (!spec) {
      exitCode_ = 1;
      break;
    }
    RoundEnd end =
        LocalRound(options_, *spec, starter_, policy_,
                   rounds_ ? &*rounds_ : nullptr, growth_ ? &*growth_ : nullptr)
            .run();
    exitCode_ = end.exitCode;
    if (!next(end, round))
      break;
  }
  // An agent waiting outside the last round stops with the job.
  if (rounds_ && options_.minNodes > 0)
    rounds_->end(lastRound_, exitCode_);
  mergeTraces();
  return exitCode_;
}

std::optional<RoundSpec> Launcher::specFor(int round) {
  RoundSpec spec;
  spec.ranks = ranks_;
  spec.round = round;
  spec.node = node_;
  spec.nodes = nodes_;
  spec.runId =
      round == 0 ? ids_.rounds : ids_.rounds + "-round" + std::to_string(round);
  spec.growAfter = ranks_ < options_.ranks ? options_.growAfter : -1.0;
  if (round > 0 && !options_.trace.empty() && node_ == 0)
    archiveRoundTraces(options_.trace, round - 1);
  lastRunId_ = spec.runId;
  // Another world than the one given (fewer or more ranks, or nodes).
  if (!options_.replan.model.empty() &&
      spec.world() != int64_t(options_.ranks) * agentNodes_) {
    if (options_.replan.cache.empty())
      options_.replan.cache = "/tmp/rtx-replan-" + ids_.job;
    try {
      spec.planned =
          programForWorld(options_.replan, static_cast<int>(spec.world()));
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
      return std::nullopt;
    }
  }
  return spec;
}

bool Launcher::next(const RoundEnd &end, int round) {
  if (end.grew && end.grewBy == 0) {
    std::fprintf(stderr,
                 "rtx-launch: restart %d with the node that is back, "
                 "resuming from the newest checkpoint\n",
                 round + 1);
    return true;
  }
  if (end.grew) {
    ranks_ += end.grewBy;
    std::fprintf(stderr,
                 "rtx-launch: restart %d with %d rank(s) (grown%s), "
                 "resuming from the newest checkpoint\n",
                 round + 1, ranks_ * static_cast<int>(nodes_),
                 ranks_ <= options_.ranks ? " back" : "");
    return true;
  }
  if (end.shrunk && !forwardedSignal()) {
    // Counted against the budget when the loss was collected.
    --ranks_;
    std::fprintf(stderr,
                 "rtx-launch: restart %d with %d rank(s) (shrunk), resuming "
                 "from the newest checkpoint\n",
                 round + 1, ranks_ * static_cast<int>(nodes_));
    return true;
  }
  if (!end.rankFailed || options_.maxRestarts == 0 || forwardedSignal())
    return false;
  return restartAfterFailure(round);
}

bool Launcher::restartAfterFailure(int round) {
  int recent = policy_.recordFailure();
  if (policy_.exceeded(recent)) {
    std::fprintf(stderr,
                 "rtx-launch: error: %d failure(s) in the last %g s, more "
                 "than --max-restarts %d allows; stopping (the newest "
                 "committed checkpoint is kept)\n",
                 recent, options_.restartWindow, options_.maxRestarts);
    // The other nodes stop too, rather than wait in the next round's
    // rendezvous for this node.
    if (rounds_)
      rounds_->fail(round + 1, "node " + std::to_string(agentNode_) +
                                   " stopped: its restart budget ran out");
    return false;
  }
  if (options_.minRanks > 0 && ranks_ > options_.minRanks)
    --ranks_;
  double backoff = RestartPolicy::backoffSeconds(recent);
  char on[96];
  if (options_.minNodes > 0)
    std::snprintf(on, sizeof on, "on the nodes that come within %g s",
                  options_.nodeWait);
  else
    std::snprintf(on, sizeof on, "with %d rank(s)",
                  ranks_ * static_cast<int>(nodes_));
  std::fprintf(stderr,
               "rtx-launch: restart %d (%d of %d in the window) in %.1f s "
               "%s, resuming from the newest checkpoint\n",
               round + 1, recent, options_.maxRestarts, backoff, on);
  // A signal ends the backoff, and the launch.
  return RestartPolicy::waitBackoff(backoff);
}

void Launcher::mergeTraces() {
  if (options_.trace.empty() || node_ != 0 || !member_)
    return;
  try {
    rtxrt::MergedTrace merged = rtxrt::mergeRankTraces(
        options_.trace, int64_t(ranks_) * nodes_, lastRunId_);
    std::string missing;
    for (int64_t r : merged.missing)
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    for (int64_t r : merged.stale)
      std::fprintf(stderr,
                   "rtx-launch: warning: %s/rank-%lld.trace.json is from "
                   "another run; not merged\n",
                   options_.trace.c_str(), static_cast<long long>(r));
    std::fprintf(stderr,
                 "rtx-launch: merged the traces of %zu rank(s) "
                 "into %s%s%s\n",
                 merged.ranks.size(), merged.path.c_str(),
                 missing.empty() ? "" : "; no trace from rank(s) ",
                 missing.c_str());
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: cannot merge the traces: %s\n",
                 error.what());
    if (exitCode_ == 0)
      exitCode_ = 1;
  }
}
