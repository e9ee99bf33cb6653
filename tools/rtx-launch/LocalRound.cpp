//===- LocalRound.cpp - supervise one round of this node's ranks ----------===//

#include "LocalRound.h"

#include "Growth.h"
#include "InJobAgent.h"
#include "LauncherProcess.h"
#include "NodeRounds.h"
#include "RankStarter.h"
#include "RestartPolicy.h"

#include "rtxrt/core/Tensor.h"

#include <csignal>
#include <cstdio>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace rtxlaunch;

LocalRound::LocalRound(const Options &options, const RoundSpec &spec,
                       const RankStarter &starter, RestartPolicy &policy,
                       NodeRounds *rounds, Growth *growth)
    : options_(options), spec_(spec), starter_(starter), policy_(policy),
      rounds_(rounds), growth_(growth),
      started_(std::chrono::steady_clock::now()) {}

LocalRound::~LocalRound() = default;

RoundEnd LocalRound::run() {
  if (options_.inJob) {
    // The round's epoch board, before any rank starts: a store out of
    // reach is an error, not a crash.
    try {
      agent_ = std::make_unique<InJobAgent>(options_, *this, policy_);
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: in-job recovery: %s\n",
                   error.what());
      return RoundEnd{1, false};
    }
  }
  if (!startRanks())
    return RoundEnd{1, false};
  while (true) {
    pumpOutput();
    reapRanks();
    if (agent_ && !stopping_ && failedRank_ < 0)
      agent_->collectLoss();
    watchNodes();
    forwardSignal();
    watchGrowth();
    if (stopping_ && std::chrono::steady_clock::now() > stopDeadline_) {
      signalAll(SIGKILL);
      stopDeadline_ = std::chrono::steady_clock::time_point::max();
    }
    if (finished())
      return end();
  }
}

bool LocalRound::startRanks() {
  children_.resize(spec_.ranks);
  for (int local = 0; local < spec_.ranks; ++local) {
    std::string failed = starter_.start(children_[local], spec_, local, 0);
    if (failed.empty())
      continue;
    std::fprintf(stderr,
                 "rtx-launch: error: cannot start rank %d of %d (%s); "
                 "stopping the %d rank(s) already started\n",
                 spec_.rankOf(local), spec_.ranks, failed.c_str(), local);
    children_.resize(local);
    stopStarted(children_, options_.graceSeconds);
    return false;
  }
  return true;
}

std::string LocalRound::replace(int local, int64_t epoch) {
  Child fresh;
  std::string failed = starter_.start(fresh, spec_, local, epoch);
  for (Child &c : children_)
    if (c.local == local && c.lost)
      c.replaced = true;
  if (failed.empty())
    children_.push_back(fresh);
  return failed;
}

void LocalRound::pumpOutput() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Child *, bool>> owners;
  for (Child &c : children_) {
    if (c.out >= 0) {
      fds.push_back({c.out, POLLIN, 0});
      owners.push_back({&c, false});
    }
    if (c.err >= 0) {
      fds.push_back({c.err, POLLIN, 0});
      owners.push_back({&c, true});
    }
  }
  if (!fds.empty())
    poll(fds.data(), fds.size(), 100);
  else
    usleep(20000);
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    Child &c = *owners[i].first;
    bool isErr = owners[i].second;
    char buffer[4096];
    ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
    std::string &pending = isErr ? c.errBuffer : c.outBuffer;
    if (n > 0) {
      pending.append(buffer, n);
      flushLines(pending, c.rank, isErr ? stderr : stdout, false);
    } else {
      flushLines(pending, c.rank, isErr ? stderr : stdout, true);
      close(fds[i].fd);
      (isErr ? c.err : c.out) = -1;
    }
  }
}

void LocalRound::reapRanks() {
  // Replacements are appended while reaping (in-job recovery): index, not
  // iterators.
  for (size_t i = 0; i < children_.size(); ++i) {
    Child &c = children_[i];
    if (c.exited)
      continue;
    int status;
    if (waitpid(c.pid, &status, WNOHANG) != c.pid)
      continue;
    c.exited = true;
    c.status = status;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && failedRank_ < 0 && !stopping_)
      rankFailed(c, status);
  }
}

void LocalRound::rankFailed(Child &c, int status) {
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::string what =
      std::string(WIFEXITED(status) ? "exited with status"
                                    : "was killed by signal") +
      " " + std::to_string(WIFEXITED(status) ? code : WTERMSIG(status));
  if (agent_) {
    agent_->rankFailed(c, code, what);
    return;
  }
  failedRank_ = c.rank;
  exitCode_ = code;
  std::fprintf(stderr, "rtx-launch: rank %d %s; stopping the other ranks\n",
               c.rank, what.c_str());
  if (rounds_)
    rounds_->fail(spec_.round, "rank " + std::to_string(c.rank) + " on node " +
                                   std::to_string(rounds_->agentNode()) + " " +
                                   what);
  stopRanks(SIGTERM);
}

void LocalRound::watchNodes() {
  if (!rounds_ || stopping_ || !nodeLook_.due())
    return;
  if (std::optional<std::string> why = rounds_->failure(spec_.round)) {
    std::fprintf(stderr,
                 "rtx-launch: node %lld: round %d failed (%s); stopping "
                 "this node's ranks\n",
                 static_cast<long long>(rounds_->agentNode()), spec_.round,
                 why->c_str());
    peerFailed_ = true;
    exitCode_ = 1;
    stopRanks(SIGTERM);
  } else if (std::optional<std::string> back =
                 rounds_->nodeBack(spec_.round, spec_.nodes)) {
    std::fprintf(stderr,
                 "rtx-launch: node %lld: growing: node %s is back; "
                 "pre-empting this node's ranks to restart with it\n",
                 static_cast<long long>(rounds_->agentNode()), back->c_str());
    growing_ = true;
    growBy_ = 0;
    stopRanks(SIGTERM);
  }
}

void LocalRound::forwardSignal() {
  if (!forwardedSignal() || stopping_)
    return;
  std::fprintf(stderr, "rtx-launch: forwarding signal %d to every rank\n",
               forwardedSignal());
  exitCode_ = 128 + forwardedSignal();
  stopRanks(forwardedSignal());
}

void LocalRound::watchGrowth() {
  if (spec_.growAfter >= 0 && !stopping_ &&
      std::chrono::steady_clock::now() - started_ >
          std::chrono::milliseconds(
              static_cast<int64_t>(spec_.growAfter * 1000))) {
    std::fprintf(stderr,
                 "rtx-launch: growing: %d rank(s) for %g s; pre-empting "
                 "them to start again with %d\n",
                 spec_.ranks, spec_.growAfter, spec_.ranks + 1);
    growing_ = true;
    stopRanks(SIGTERM);
  }
  // A node offered ranks: grow at the next step boundary (the ranks are
  // pre-empted as for --grow-after), up to --max-ranks.
  if (!growth_ || stopping_ || (agent_ && agent_->collecting()) ||
      spec_.ranks >= options_.maxRanks || !offerLook_.due())
    return;
  bool met = !agent_ || agent_->epochJoined();
  if (std::optional<int> by = growth_->takeOffer(spec_.ranks, met)) {
    growBy_ = *by;
    growing_ = true;
    stopRanks(SIGTERM);
  }
}

bool LocalRound::finished() const {
  // A node whose every rank was lost waits for the decision to replace
  // them (several nodes).
  bool done = !(agent_ && agent_->settled()) || stopping_;
  for (const Child &c : children_)
    done = done && c.exited && c.out < 0 && c.err < 0;
  return done;
}

RoundEnd LocalRound::end() {
  // A forwarded SIGTERM that every rank answered by exiting 0 (a program
  // pre-empted: its checkpoint committed) ends the launch with 0.
  bool clean = true;
  for (Child &c : children_)
    clean = clean &&
            (c.replaced || (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0));
  if (failedRank_ < 0 && forwardedSignal() && clean)
    exitCode_ = 0;
  // The ranks of a shrunk job may stop at the step boundary that the other
  // nodes' pre-emption chose before this agent saw the node that is back.
  if (!growing_ && !stopping_ && exitCode_ == 0 && !forwardedSignal() &&
      rounds_ && rounds_->nodeBack(spec_.round, spec_.nodes)) {
    growing_ = true;
    growBy_ = 0;
  }
  if (growing_ && failedRank_ < 0 && !forwardedSignal()) {
    // A rank that did not commit and exit 0 (no --checkpoint, or the run
    // had finished its steps) is no growth.
    if (clean)
      return RoundEnd{0, false, true, growBy_};
    std::fprintf(stderr, "rtx-launch: the ranks did not all exit 0 when "
                         "pre-empted to grow (does the program have "
                         "--checkpoint?)\n");
    return RoundEnd{1, true};
  }
  if (shrinking_)
    return RoundEnd{exitCode_, true, false, 0, true};
  return RoundEnd{exitCode_, failedRank_ >= 0 || peerFailed_};
}

void LocalRound::signalAll(int signal) {
  // Signals go to each rank's process group: a rank's own children (a
  // shell's commands, data loaders) stop with it.
  for (Child &c : children_) {
    if (c.replaced)
      continue;
    kill(-c.pid, signal);
    // A stopped rank (SIGSTOP, a debugger let go) handles it only once
    // continued.
    kill(-c.pid, SIGCONT);
  }
}

void LocalRound::stopRanks(int signal) {
  stopping_ = true;
  signalAll(signal);
  stopDeadline_ =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int>(options_.graceSeconds * 1000));
}

void LocalRound::giveUp(int rank, int code, int signal) {
  failedRank_ = rank;
  exitCode_ = code;
  stopRanks(signal);
  // The other nodes' agents restart with this one.
  if (rounds_)
    rounds_->fail(spec_.round, "in-job recovery on node " +
                                   std::to_string(rounds_->agentNode()) +
                                   " gave up (rank " + std::to_string(rank) +
                                   ")");
}

void LocalRound::storeFailed(const rtxrt::Error &error, int rank) {
  std::fprintf(stderr, "rtx-launch: error: %s; every rank restarts\n",
               error.what());
  giveUp(rank, 1, SIGTERM);
}

void LocalRound::shrink(int rank, int saveSeconds) {
  failedRank_ = rank;
  exitCode_ = 1;
  stopping_ = shrinking_ = true;
  stopDeadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(saveSeconds);
}
