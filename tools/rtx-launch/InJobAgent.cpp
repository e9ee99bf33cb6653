//===- InJobAgent.cpp - in-job recovery's agent on this node --------------===//

#include "InJobAgent.h"

#include "LocalRound.h"
#include "RestartPolicy.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <csignal>
#include <cstdio>

#include <sys/wait.h>

using namespace rtxlaunch;

namespace {
/// How long the survivors of a shrinking job may take to save their state
/// (each waits at most its rendezvous timeout for the others) before they
/// are killed and the job resumes from the newest committed checkpoint.
constexpr int kShrinkSaveSeconds = 300;
/// How much longer than --recover-window a node waits for the others'
/// settlements (node 0), or for node 0's decision (the others: 10 s more).
constexpr int kSettleSeconds = 10;
} // namespace

InJobAgent::InJobAgent(const Options &options, LocalRound &round,
                       RestartPolicy &policy)
    : options_(options), round_(round), policy_(policy),
      board_(options.store, round.spec().runId) {}

bool InJobAgent::epochJoined() {
  if (epoch_ == 0)
    return true;
  for (const Child &c : round_.children()) {
    if (c.replaced)
      continue;
    try {
      if (!board_.hasJoined(epoch_, c.rank))
        return false;
    } catch (const rtxrt::Error &) {
      return false;
    }
  }
  return true;
}

void InJobAgent::rankFailed(Child &c, int code, const std::string &what) {
  if (!epochJoined()) {
    // Lost while the epoch's rendezvous was under way: the others wait in
    // it for a rank that will not come. Restart every rank (they hold
    // nothing the newest checkpoint does not: no step ran in this epoch).
    std::fprintf(stderr,
                 "rtx-launch: rank %d failed before epoch %lld of the "
                 "in-job recovery met; stopping the other ranks\n",
                 c.rank, static_cast<long long>(epoch_));
    round_.giveUp(c.rank, code, SIGKILL);
    return;
  }
  // The others keep running; the loss is collected by collectLoss().
  c.lost = true;
  std::fprintf(stderr,
               "rtx-launch: rank %d %s; in-job recovery: the other ranks "
               "keep their state\n",
               c.rank, what.c_str());
  startCollecting();
}

void InJobAgent::startCollecting() {
  if (collecting_)
    return;
  collecting_ = true;
  if (round_.spec().nodes > 1) {
    try {
      board_.beginLoss(epoch_);
    } catch (const rtxrt::Error &error) {
      // The others' ranks report on their own (their collectives fail).
      std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
    }
  }
  reportDeadline_ = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(
                        static_cast<int64_t>(options_.recoverWindow * 1000));
}

InJobAgent::Reports InJobAgent::readReports() {
  Reports reports;
  for (Child &c : round_.children()) {
    if (c.exited || c.lost)
      continue;
    ++reports.running;
    bool reported = false;
    try {
      reported = board_.lost(epoch_, c.rank).has_value();
    } catch (const rtxrt::Error &) {
      // The store is out for now: not reported yet.
    }
    if (reported) {
      startCollecting();
      continue;
    }
    reports.silent.push_back(&c);
    reports.waiting = reports.waiting || !isStopped(c.pid);
  }
  return reports;
}

void InJobAgent::collectLoss() {
  if (settled_) {
    awaitDecision();
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (round_.spec().nodes > 1 && !collecting_ && now >= nextLossLook_) {
    // Another node's agent saw a loss: collect this node's ranks too.
    nextLossLook_ = now + std::chrono::milliseconds(250);
    try {
      if (board_.lossBegun(epoch_))
        startCollecting();
    } catch (const rtxrt::Error &) {
    }
  }
  Reports reports = readReports();
  now = std::chrono::steady_clock::now();
  if (!collecting_ || (reports.waiting && now < reportDeadline_))
    return;
  collecting_ = false;
  reportDeadline_ = std::chrono::steady_clock::time_point::max();
  int survivors = reports.running - static_cast<int>(reports.silent.size());
  killSilent(reports.silent);
  std::vector<int> lost;
  int firstLost = -1;
  for (Child &c : round_.children())
    if (c.lost && !c.replaced) {
      lost.push_back(c.local);
      firstLost = firstLost < 0 ? c.rank : firstLost;
    }
  if (round_.spec().nodes > 1)
    settle(survivors, lost, firstLost);
  else
    decide(survivors, lost, firstLost);
}

void InJobAgent::killSilent(const std::vector<Child *> &silent) {
  for (Child *c : silent) {
    std::fprintf(stderr,
                 "rtx-launch: rank %d %s; in-job recovery: killing it\n",
                 c->rank,
                 isStopped(c->pid)
                     ? "is stopped"
                     : ("reported no lost peer within " +
                        std::to_string(options_.recoverWindow) + " s (hung?)")
                           .c_str());
    kill(-c->pid, SIGKILL);
    kill(-c->pid, SIGCONT);
    waitpid(c->pid, &c->status, 0);
    c->exited = c->lost = true;
  }
}

void InJobAgent::decide(int survivors, const std::vector<int> &lost,
                        int firstLost) {
  if (survivors == 0) {
    std::fprintf(stderr, "rtx-launch: in-job recovery: no rank survived; "
                         "every rank restarts\n");
    round_.giveUp(firstLost, 1, SIGTERM);
    return;
  }
  if (lost.empty()) {
    std::fprintf(stderr,
                 "rtx-launch: in-job recovery: every rank reported a lost "
                 "peer and none failed (a cut link?); every rank "
                 "restarts\n");
    round_.giveUp(round_.children().front().rank, 1, SIGTERM);
    return;
  }
  int recent = policy_.recordFailure();
  if (policy_.exceeded(recent)) {
    round_.giveUp(firstLost, 1, SIGTERM);
    return;
  }
  if (options_.minRanks > 0 && round_.spec().ranks > options_.minRanks) {
    shrink(survivors, firstLost, recent);
    return;
  }
  try {
    board_.open(epoch_ + 1, round_.spec().world());
  } catch (const rtxrt::Error &error) {
    round_.storeFailed(error, firstLost);
    return;
  }
  ++epoch_;
  replaceLost(lost, survivors, recent);
}

void InJobAgent::shrink(int survivors, int firstLost, int recent) {
  // The job shrinks: the smaller world runs another program, so the
  // survivors save the newest state they hold (their processes end) and
  // the next round resumes from it with one rank fewer.
  std::vector<int64_t> alive;
  for (Child &c : round_.children())
    if (!c.exited && !c.lost)
      alive.push_back(c.rank);
  std::sort(alive.begin(), alive.end());
  try {
    board_.shrink(epoch_, alive);
  } catch (const rtxrt::Error &error) {
    round_.storeFailed(error, firstLost);
    return;
  }
  std::fprintf(
      stderr,
      "rtx-launch: in-job recovery: shrinking to %d rank(s): "
      "the %d survivor(s) save the newest state they hold, "
      "then the job resumes from it (%d of %d in the "
      "window)\n",
      static_cast<int>((round_.spec().ranks - 1) * round_.spec().nodes),
      survivors, recent, policy_.maxRestarts());
  round_.shrink(firstLost, kShrinkSaveSeconds);
}

void InJobAgent::settle(int survivors, const std::vector<int> &lost,
                        int firstLost) {
  const RoundSpec &spec = round_.spec();
  rtxrt::EpochBoard::NodeLoss mine;
  mine.survivors = survivors;
  for (int local : lost)
    mine.lost.push_back(spec.rankOf(local));
  settledFirst_ = firstLost >= 0 ? firstLost : round_.children().front().rank;
  try {
    board_.settleLoss(epoch_, spec.node, mine);
  } catch (const rtxrt::Error &error) {
    round_.storeFailed(error, settledFirst_);
    return;
  }
  std::fprintf(stderr,
               "rtx-launch: node %lld: in-job recovery: %d survivor(s) "
               "and %zu lost rank(s) here; %s\n",
               static_cast<long long>(spec.node), survivors, lost.size(),
               spec.node == 0 ? "deciding once every node has collected"
                              : "waiting for node 0's decision");
  settled_ = true;
  settledLost_ = lost;
  decideBy_ = std::chrono::steady_clock::now() +
              std::chrono::milliseconds(static_cast<int64_t>(
                  (options_.recoverWindow + kSettleSeconds) * 1000));
  awaitDecision();
}

void InJobAgent::awaitDecision() {
  const RoundSpec &spec = round_.spec();
  auto now = std::chrono::steady_clock::now();
  // Every node's settlement, or the first node missing.
  int64_t survivorsAll = 0, lostAll = 0, missing = -1;
  for (int64_t i = 0; i < spec.nodes && missing < 0; ++i) {
    std::optional<rtxrt::EpochBoard::NodeLoss> loss;
    try {
      loss = board_.settledLoss(epoch_, i);
    } catch (const rtxrt::Error &) {
      // The store is out for now, or the entry is not whole yet.
    }
    if (!loss)
      missing = i;
    else {
      survivorsAll += loss->survivors;
      lostAll += static_cast<int64_t>(loss->lost.size());
    }
  }
  bool open = false;
  try {
    open = board_.isOpen(epoch_ + 1);
  } catch (const rtxrt::Error &) {
  }
  if (!open && spec.node == 0 && missing < 0) {
    if (!openForEveryNode(survivorsAll, lostAll))
      return;
    open = true;
  }
  if (!open) {
    // Node 0 waits for the others' settlements until decideBy_; the others
    // wait for its decision a while longer.
    int later = spec.node == 0 ? 0 : kSettleSeconds;
    if (now > decideBy_ + std::chrono::seconds(later)) {
      std::fprintf(stderr,
                   "rtx-launch: in-job recovery: %s within %.0f s of the loss; "
                   "every rank of every node restarts\n",
                   missing >= 0 ? ("node " + std::to_string(missing) +
                                   "'s agent did not settle it (node lost?)")
                                      .c_str()
                                : "node 0's agent did not open the next epoch",
                   options_.recoverWindow + kSettleSeconds + later);
      round_.giveUp(settledFirst_, 1, SIGTERM);
    }
    return;
  }
  int recent = policy_.recordFailure();
  settled_ = false;
  ++epoch_;
  std::vector<int> lost = std::move(settledLost_);
  settledLost_.clear();
  if (lost.empty())
    std::fprintf(stderr,
                 "rtx-launch: in-job recovery: epoch %lld: node %lld "
                 "lost no rank; its ranks keep their state (%d of %d in "
                 "the window)\n",
                 static_cast<long long>(epoch_),
                 static_cast<long long>(spec.node), recent,
                 policy_.maxRestarts());
  replaceLost(lost, static_cast<int>(survivorsAll), recent);
}

bool InJobAgent::openForEveryNode(int64_t survivorsAll, int64_t lostAll) {
  const char *why = survivorsAll == 0 ? "no rank survived"
                    : lostAll == 0 ? "every rank reported a lost peer and none "
                                     "failed (a cut link?)"
                    : policy_.exceeded(policy_.recentFailures() + 1)
                        ? "the restart budget is spent"
                        : nullptr;
  if (why) {
    std::fprintf(stderr,
                 "rtx-launch: in-job recovery: %s; every rank of "
                 "every node restarts\n",
                 why);
    round_.giveUp(settledFirst_, 1, SIGTERM);
    return false;
  }
  try {
    board_.open(epoch_ + 1, round_.spec().world());
  } catch (const rtxrt::Error &error) {
    round_.storeFailed(error, settledFirst_);
    return false;
  }
  return true;
}

void InJobAgent::replaceLost(const std::vector<int> &lost, int survivors,
                             int recent) {
  for (int local : lost) {
    std::string failed = round_.replace(local, epoch_);
    int rank = round_.spec().rankOf(local);
    if (!failed.empty()) {
      std::fprintf(stderr,
                   "rtx-launch: error: cannot start a replacement for "
                   "rank %d (%s); stopping the other ranks\n",
                   rank, failed.c_str());
      round_.giveUp(rank, 1, SIGTERM);
      return;
    }
    std::fprintf(stderr,
                 "rtx-launch: in-job recovery: epoch %lld: replaced rank "
                 "%d; %d survivor(s) keep their state (%d of %d in the "
                 "window)\n",
                 static_cast<long long>(epoch_), rank, survivors, recent,
                 policy_.maxRestarts());
  }
}
