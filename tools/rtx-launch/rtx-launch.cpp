//===- rtx-launch.cpp - start the ranks of a training program -------------===//
//
//   rtx-launch -n N [--nnodes M --node-rank I] [--store file:DIR |
//   redis://HOST:PORT]
//              [--devices LIST] [--run-id ID] [--grace S]
//              [--trace DIR [--trace-steps A:B]] -- PROGRAM ARGS...
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
//===----------------------------------------------------------------------===//

#include "Children.h"
#include "LaunchOptions.h"
#include "Replan.h"

#include "rtxrt/LaunchEnvironment.h"
#include "rtxrt/elastic/EpochBoard.h"
#include "rtxrt/elastic/GrowthBoard.h"
#include "rtxrt/elastic/RoundBoard.h"
#include "rtxrt/Tensor.h"
#include "rtxrt/Trace.h"
#include "rtxrt/TraceMerge.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/// How long the survivors of a shrinking job may take to save their state
/// (each waits at most its rendezvous timeout for the others) before they
/// are killed and the job resumes from the newest committed checkpoint.
constexpr int kShrinkSaveSeconds = 300;

volatile sig_atomic_t forwardedSignal = 0;
void onSignal(int signal) { forwardedSignal = signal; }

/// "HOST:PID": this launch, as the store's offers name it for a person.
std::string launcherName() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(getpid());
}

} // namespace

using namespace rtxlaunch;

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  if (options.join > 0) {
    // A node offers ranks to a running job (it grows at a step boundary).
    try {
      rtxrt::GrowthBoard board(options.store, options.runId);
      int64_t n = board.offerRanks(options.join, launcherName());
      std::fprintf(
          stderr, "rtx-launch: offered %d rank(s) to run %s (join.%lld)\n",
          options.join, options.runId.c_str(), static_cast<long long>(n));
      return 0;
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
      return 1;
    }
  }

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
  // The agent's own node, its name in the store. `node` and `nodes` are
  // those of the current round: a job that shrinks by nodes (--min-nodes)
  // numbers a round's members 0, 1, ... in their order.
  const int64_t agentNode = node, agentNodes = nodes;

  struct sigaction action {};
  action.sa_handler = onSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

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
  std::string roundsRunId = runId;
  if (!runId.empty() && nodes == 1 && !options.store.empty()) {
    try {
      int64_t launch = rtxrt::GrowthBoard(options.store, runId)
                           .claimLaunch(launcherName());
      if (launch > 0)
        roundsRunId = runId + "-launch" + std::to_string(launch);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  if (runId.empty())
    runId = roundsRunId =
        std::to_string(getpid()) + "-" +
        std::to_string(
            std::chrono::system_clock::now().time_since_epoch().count());
  // The program's arguments for a round: "{world}" becomes the number of
  // ranks; a restart resumes from the newest checkpoint.
  // `planned`: the program --replan built for this world (else empty). It
  // replaces the first argument that names an executable file: the
  // program itself, also behind a wrapper such as `sh -c '...' X ./dp2`.
  auto programOf = [&](int ranks, int round, const std::string &planned) {
    std::vector<std::string> program;
    bool resumes = false, replaced = planned.empty();
    for (std::string arg : options.program) {
      struct stat st;
      if (!replaced && arg.find('/') != std::string::npos &&
          stat(arg.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          access(arg.c_str(), X_OK) == 0) {
        arg = planned;
        replaced = true;
      }
      for (size_t at; (at = arg.find("{world}")) != std::string::npos;)
        arg.replace(at, 7, std::to_string(ranks * nodes));
      resumes = resumes || arg == "--resume";
      program.push_back(arg);
    }
    if (round > 0 && !resumes)
      program.push_back("--resume");
    return program;
  };
  struct RoundEnd {
    int exitCode;
    bool rankFailed;     // a rank failed (not a forwarded signal)
    bool grew = false;   // pre-empted to grow, every rank exited 0
    int grewBy = 0;      // ... by this many ranks
    bool shrunk = false; // in-job: the survivors saved to shrink (counted)
  };
  // Test hook: RTX_LAUNCH_FAIL_FORK_AT=K makes the fork of local rank K fail
  // with EAGAIN, as it does when the process limit is reached.
  const char *failForkEnv = std::getenv("RTX_LAUNCH_FAIL_FORK_AT");
  int failForkAt = failForkEnv ? std::atoi(failForkEnv) : -1;
  // Failures that count against --max-restarts: restarts and in-job
  // replacements alike.
  std::vector<std::chrono::steady_clock::time_point> failures;
  auto recentFailures = [&] {
    auto now = std::chrono::steady_clock::now();
    auto window = std::chrono::milliseconds(
        static_cast<int64_t>(options.restartWindow * 1000));
    int recent = 0;
    for (auto t : failures)
      recent += now - t <= window;
    return recent;
  };
  // Offers of ranks (rtx-launch --join) to a job that may grow: under the
  // job's own run id, taken in order, each once.
  std::optional<rtxrt::GrowthBoard> joins;
  int64_t offersTaken = 0;
  if (!options.store.empty() &&
      (options.minRanks > 0 || options.maxRanks > options.ranks)) {
    try {
      joins.emplace(options.store, runId);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  // A job of several nodes that restarts (one agent per node): a round
  // that fails on one node ends on every node, and all start the next
  // round together (round-R.failed in the store).
  std::optional<rtxrt::RoundBoard> rounds;
  if (nodes > 1 && options.maxRestarts > 0) {
    try {
      rounds.emplace(options.store, runId);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  const pid_t launcherPid = getpid();
  // A job that shrank by nodes: the node that asked to be taken back into
  // round `round` (run on `roundNodes` of the job's nodes), if one has.
  auto nodeBack = [&](int round,
                      int64_t roundNodes) -> std::optional<std::string> {
    if (options.minNodes == 0 || roundNodes >= agentNodes)
      return std::nullopt;
    try {
      return rounds->joinRequest(round);
    } catch (const rtxrt::Error &) {
      return std::nullopt; // the store is out for now: look again later
    }
  };
  // An agent that came back after round `round`'s members were chosen
  // without it asks them to take it in, and waits outside: -1 once they
  // start the next round (it joins), else its exit status (the job ended,
  // or a signal).
  auto waitOutside = [&](int round, const std::string &members) -> int {
    std::fprintf(stderr,
                 "rtx-launch: node %lld: round %d runs on node(s) "
                 "%s without it; asking them to take it in at their next "
                 "step boundary\n",
                 static_cast<long long>(agentNode), round, members.c_str());
    try {
      rounds->askToJoin(round, agentNode, launcherName());
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
      return 1;
    }
    while (!forwardedSignal) {
      try {
        if (rounds->roundStarted(round + 1, agentNodes))
          return -1;
        if (std::optional<int> code = rounds->jobEnded(round)) {
          std::fprintf(stderr,
                       "rtx-launch: node %lld: the job ended (status %d) "
                       "before it took this node in\n",
                       static_cast<long long>(agentNode), *code);
          return *code;
        }
        if (std::optional<std::string> why = rounds->roundFailure(round + 1)) {
          std::fprintf(stderr, "rtx-launch: error: the job stopped: %s\n",
                       why->c_str());
          return 1;
        }
      } catch (const rtxrt::Error &) {
        // The store is out for now: look again.
      }
      usleep(100000);
    }
    return 128 + forwardedSignal;
  };
  auto runRound = [&](int ranks, int round, const std::string &roundRunId,
                      double growAfter,
                      const std::string &planned) -> RoundEnd {
    auto started = std::chrono::steady_clock::now();
    int64_t world = int64_t(ranks) * nodes;
    // Starts local rank `local` into `child`; in-job recovery's epoch > 0
    // starts a replacement, which resumes too. Returns what failed.
    auto startRank = [&](Child &child, int local, int64_t epoch,
                         bool failFork) -> std::string {
      int out[2] = {-1, -1}, err[2] = {-1, -1};
      auto cannotStart = [&](const char *what, int error) {
        for (int fd : {out[0], out[1], err[0], err[1]})
          if (fd >= 0)
            close(fd);
        return std::string(what) + ": " + std::strerror(error);
      };
      if (pipe(out) != 0 || pipe(err) != 0)
        return cannotStart("pipe", errno);
      pid_t pid = failFork ? (errno = EAGAIN, -1) : fork();
      if (pid < 0)
        return cannotStart("fork", errno);
      int rank = static_cast<int>(node * ranks + local);
      if (pid == 0) {
        // Its own process group, so stopping a rank stops what it started.
        setpgid(0, 0);
        // A rank ends with its agent: the ranks of a lost node's agent go
        // with it, and none runs on unsupervised.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != launcherPid)
          _exit(1);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(err[0]);
        // The one handoff to the program (rtxrt/LaunchEnvironment.h). The
        // node placement is now in RANK; an outer launcher's NODE_RANK etc.
        // stay for the program, which does not read them as its own.
        rtxrt::LaunchHandoff handoff;
        handoff.rank = rank;
        handoff.world = world;
        handoff.localRank = local;
        handoff.localWorld = ranks;
        handoff.restartRound = round;
        handoff.inJob = options.inJob;
        handoff.recoverEpoch = epoch;
        handoff.store = options.store;
        handoff.devices = options.devices;
        handoff.trace = options.trace;
        handoff.traceSteps = options.traceSteps;
        handoff.runId = roundRunId;
        for (const auto &[name, value] : handoff.variables())
          setenv(name.c_str(), value.c_str(), 1);
        std::vector<std::string> program =
            programOf(ranks, epoch > 0 ? round + 1 : round, planned);
        std::vector<char *> args;
        for (std::string &a : program)
          args.push_back(a.data());
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "cannot start '%s': %s\n", args[0],
                     std::strerror(errno));
        _exit(127);
      }
      setpgid(pid, pid);
      close(out[1]);
      close(err[1]);
      child = Child();
      child.pid = pid;
      child.rank = rank;
      child.local = local;
      child.out = out[0];
      child.err = err[0];
      return "";
    };
    // In-job recovery (--recover in-job): the board of this round's epochs,
    // before any rank starts (a store out of reach is an error, not a crash).
    std::optional<rtxrt::EpochBoard> board;
    if (options.inJob) {
      try {
        board.emplace(options.store, roundRunId);
      } catch (const rtxrt::Error &error) {
        std::fprintf(stderr, "rtx-launch: error: in-job recovery: %s\n",
                     error.what());
        return RoundEnd{1, false};
      }
    }
    std::vector<Child> children(ranks);
    for (int local = 0; local < ranks; ++local) {
      std::string failed =
          startRank(children[local], local, 0, local == failForkAt);
      if (!failed.empty()) {
        std::fprintf(stderr,
                     "rtx-launch: error: cannot start rank %d of %d (%s); "
                     "stopping the %d rank(s) already started\n",
                     static_cast<int>(node * ranks + local), ranks,
                     failed.c_str(), local);
        children.resize(local);
        stopStarted(children, options.graceSeconds);
        return RoundEnd{1, false};
      }
    }
    // In-job recovery: the epoch the ranks run in, and while a loss is being
    // collected, until when survivors may report.
    int64_t epoch = 0;
    bool collecting = false;
    auto reportDeadline = std::chrono::steady_clock::time_point::max();

    int exitCode = 0;
    int failedRank = -1;
    bool stopping = false, growing = false, shrinking = false;
    bool peerFailed = false; // the round failed on another node
    auto nextRoundLook = std::chrono::steady_clock::now();
    int growBy = 1;
    auto nextOfferLook = std::chrono::steady_clock::now();
    auto stopDeadline = std::chrono::steady_clock::time_point::max();
    // Signals go to each rank's process group: a rank's own children (a
    // shell's commands, data loaders) stop with it.
    auto stopAll = [&](int signal) {
      for (Child &c : children) {
        if (c.replaced)
          continue;
        kill(-c.pid, signal);
        // A stopped rank (SIGSTOP, a debugger let go) handles it only once
        // continued.
        kill(-c.pid, SIGCONT);
      }
    };

    // Stops every rank: `signal` now, SIGKILL after --grace.
    auto stopRanks = [&](int signal) {
      stopping = true;
      stopAll(signal);
      stopDeadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(
                         static_cast<int>(options.graceSeconds * 1000));
    };
    // Ends the round as a failure of `rank` with `code`: `signal` to every
    // rank (SIGKILL after --grace), and the restart path decides.
    auto giveUp = [&](int rank, int code, int signal) {
      failedRank = rank;
      exitCode = code;
      stopping = true;
      stopAll(signal);
      if (rounds) {
        // The other nodes' agents restart with this one.
        try {
          rounds->failRound(
              round, "in-job recovery on node " + std::to_string(agentNode) +
                         " gave up (rank " + std::to_string(rank) + ")");
        } catch (const rtxrt::Error &error) {
          std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
        }
      }
      stopDeadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(
                         static_cast<int>(options.graceSeconds * 1000));
    };
    // The store refused a recovery step: every rank restarts, `rank` named.
    auto storeFailed = [&](const rtxrt::Error &error, int rank) {
      std::fprintf(stderr, "rtx-launch: error: %s; every rank restarts\n",
                   error.what());
      giveUp(rank, 1, SIGTERM);
    };
    // Whether every rank met in the current epoch (epoch 0: the first
    // rendezvous, which fails as without in-job recovery).
    auto epochJoined = [&] {
      if (epoch == 0)
        return true;
      for (const Child &c : children) {
        if (c.replaced)
          continue;
        try {
          if (!board->hasJoined(epoch, c.rank))
            return false;
        } catch (const rtxrt::Error &) {
          return false;
        }
      }
      return true;
    };
    // The first sign of a loss (a death, or a survivor's report) opens the
    // window in which the other running ranks report.
    auto startCollecting = [&] {
      if (collecting)
        return;
      collecting = true;
      if (nodes > 1) {
        try {
          board->beginLoss(epoch);
        } catch (const rtxrt::Error &error) {
          // The others' ranks report on their own (their collectives fail).
          std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
        }
      }
      reportDeadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int64_t>(options.recoverWindow * 1000));
    };
    // Opens nothing: starts replacements for this node's `lost` local ranks
    // in the (already opened) current epoch.
    auto replaceLost = [&](const std::vector<int> &lost, int survivors,
                           int recent) {
      for (int local : lost) {
        Child fresh;
        std::string failed = startRank(fresh, local, epoch, false);
        for (Child &c : children)
          if (c.local == local && c.lost)
            c.replaced = true;
        int rank = static_cast<int>(node * ranks + local);
        if (!failed.empty()) {
          std::fprintf(stderr,
                       "rtx-launch: error: cannot start a replacement for "
                       "rank %d (%s); stopping the other ranks\n",
                       rank, failed.c_str());
          giveUp(rank, 1, SIGTERM);
          return;
        }
        std::fprintf(stderr,
                     "rtx-launch: in-job recovery: epoch %lld: replaced rank "
                     "%d; %d survivor(s) keep their state (%d of %d in the "
                     "window)\n",
                     static_cast<long long>(epoch), rank, survivors, recent,
                     options.maxRestarts);
        children.push_back(fresh);
      }
    };
    // Several nodes: each agent settles its own ranks' part of a loss
    // (epoch-E.node-I); node 0's agent decides for the job once every node
    // has, and every agent replaces its own lost ranks once epoch E + 1 is
    // open. A node that does not settle in time (lost with its agent), or
    // no decision in time (node 0 lost), fails the round: every rank of
    // every node restarts from the newest checkpoint.
    bool settled = false;
    std::vector<int> settledLost; // this node's lost local ranks
    int settledFirst = -1;        // a rank to name when giving up
    auto decideBy = std::chrono::steady_clock::time_point::max();
    auto nextLossLook = std::chrono::steady_clock::now();
    auto awaitDecision = [&] {
      auto now = std::chrono::steady_clock::now();
      // Every node's settlement, or the first node missing.
      int64_t survivorsAll = 0, lostAll = 0, missing = -1;
      for (int64_t i = 0; i < nodes && missing < 0; ++i) {
        std::optional<rtxrt::EpochBoard::NodeLoss> loss;
        try {
          loss = board->settledLoss(epoch, i);
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
        open = board->isOpen(epoch + 1);
      } catch (const rtxrt::Error &) {
      }
      if (!open && node == 0 && missing < 0) {
        const char *why = survivorsAll == 0 ? "no rank survived"
                          : lostAll == 0
                              ? "every rank reported a lost peer and none "
                                "failed (a cut link?)"
                          : recentFailures() + 1 > options.maxRestarts
                              ? "the restart budget is spent"
                              : nullptr;
        if (why) {
          std::fprintf(stderr,
                       "rtx-launch: in-job recovery: %s; every rank of "
                       "every node restarts\n",
                       why);
          giveUp(settledFirst, 1, SIGTERM);
          return;
        }
        try {
          board->open(epoch + 1, world);
          open = true;
        } catch (const rtxrt::Error &error) {
          storeFailed(error, settledFirst);
          return;
        }
      }
      if (!open) {
        // Node 0 waits for the others' settlements until decideBy; the
        // others wait for its decision a while longer.
        int later = node == 0 ? 0 : 10;
        if (now > decideBy + std::chrono::seconds(later)) {
          std::fprintf(
              stderr,
              "rtx-launch: in-job recovery: %s within %.0f s of the loss; "
              "every rank of every node restarts\n",
              missing >= 0 ? ("node " + std::to_string(missing) +
                              "'s agent did not settle it (node lost?)")
                                 .c_str()
                           : "node 0's agent did not open the next epoch",
              options.recoverWindow + 10 + later);
          giveUp(settledFirst, 1, SIGTERM);
        }
        return;
      }
      failures.push_back(now);
      int recent = recentFailures();
      settled = false;
      ++epoch;
      std::vector<int> lost = std::move(settledLost);
      settledLost.clear();
      if (lost.empty())
        std::fprintf(stderr,
                     "rtx-launch: in-job recovery: epoch %lld: node %lld "
                     "lost no rank; its ranks keep their state (%d of %d in "
                     "the window)\n",
                     static_cast<long long>(epoch),
                     static_cast<long long>(node), recent, options.maxRestarts);
      replaceLost(lost, static_cast<int>(survivorsAll), recent);
    };

    // In-job recovery: once a rank died or a survivor reported a lost peer,
    // every other running rank has --recover-window seconds to report too
    // (a stopped process cannot: it counts as lost at once). Then those
    // that did not are killed, the next epoch is opened and the lost ranks
    // are replaced. With no survivor, or no rank lost (every one reported:
    // a cut link), every rank restarts as without --recover in-job.
    auto collectLoss = [&] {
      if (settled) {
        awaitDecision();
        return;
      }
      if (nodes > 1 && !collecting &&
          std::chrono::steady_clock::now() >= nextLossLook) {
        // Another node's agent saw a loss: collect this node's ranks too.
        nextLossLook =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
        try {
          if (board->lossBegun(epoch))
            startCollecting();
        } catch (const rtxrt::Error &) {
        }
      }
      // The running ranks that have not reported (yet), read once.
      std::vector<Child *> silent;
      int running = 0;
      bool waiting = false;
      for (Child &c : children) {
        if (c.exited || c.lost)
          continue;
        ++running;
        bool reported = false;
        try {
          reported = board->lost(epoch, c.rank).has_value();
        } catch (const rtxrt::Error &) {
          // The store is out for now: not reported yet.
        }
        if (reported) {
          startCollecting();
          continue;
        }
        silent.push_back(&c);
        waiting = waiting || !isStopped(c.pid);
      }
      auto now = std::chrono::steady_clock::now();
      if (!collecting || (waiting && now < reportDeadline))
        return;
      collecting = false;
      reportDeadline = std::chrono::steady_clock::time_point::max();
      int survivors = running - static_cast<int>(silent.size());
      for (Child *c : silent) {
        std::fprintf(
            stderr, "rtx-launch: rank %d %s; in-job recovery: killing it\n",
            c->rank,
            isStopped(c->pid)
                ? "is stopped"
                : ("reported no lost peer within " +
                   std::to_string(options.recoverWindow) + " s (hung?)")
                      .c_str());
        kill(-c->pid, SIGKILL);
        kill(-c->pid, SIGCONT);
        waitpid(c->pid, &c->status, 0);
        c->exited = c->lost = true;
      }
      std::vector<int> lost;
      int firstLost = -1;
      for (Child &c : children)
        if (c.lost && !c.replaced) {
          lost.push_back(c.local);
          firstLost = firstLost < 0 ? c.rank : firstLost;
        }
      if (nodes > 1) {
        rtxrt::EpochBoard::NodeLoss mine;
        mine.survivors = survivors;
        for (int local : lost)
          mine.lost.push_back(node * ranks + local);
        settledFirst = firstLost >= 0 ? firstLost : children.front().rank;
        try {
          board->settleLoss(epoch, node, mine);
        } catch (const rtxrt::Error &error) {
          storeFailed(error, settledFirst);
          return;
        }
        std::fprintf(stderr,
                     "rtx-launch: node %lld: in-job recovery: %d survivor(s) "
                     "and %zu lost rank(s) here; %s\n",
                     static_cast<long long>(node), survivors, lost.size(),
                     node == 0 ? "deciding once every node has collected"
                               : "waiting for node 0's decision");
        settled = true;
        settledLost = lost;
        decideBy = now + std::chrono::milliseconds(static_cast<int64_t>(
                             (options.recoverWindow + 10) * 1000));
        awaitDecision();
        return;
      }
      if (survivors == 0) {
        std::fprintf(stderr, "rtx-launch: in-job recovery: no rank survived; "
                             "every rank restarts\n");
        giveUp(firstLost, 1, SIGTERM);
        return;
      }
      if (lost.empty()) {
        std::fprintf(stderr,
                     "rtx-launch: in-job recovery: every rank reported a lost "
                     "peer and none failed (a cut link?); every rank "
                     "restarts\n");
        giveUp(children.front().rank, 1, SIGTERM);
        return;
      }
      failures.push_back(now);
      int recent = recentFailures();
      if (recent > options.maxRestarts) {
        giveUp(firstLost, 1, SIGTERM);
        return;
      }
      if (options.minRanks > 0 && ranks > options.minRanks) {
        // The job shrinks: the smaller world runs another program, so the
        // survivors save the newest state they hold (their processes end)
        // and the next round resumes from it with one rank fewer.
        std::vector<int64_t> alive;
        for (Child &c : children)
          if (!c.exited && !c.lost)
            alive.push_back(c.rank);
        std::sort(alive.begin(), alive.end());
        try {
          board->shrink(epoch, alive);
        } catch (const rtxrt::Error &error) {
          storeFailed(error, firstLost);
          return;
        }
        std::fprintf(stderr,
                     "rtx-launch: in-job recovery: shrinking to %d rank(s): "
                     "the %d survivor(s) save the newest state they hold, "
                     "then the job resumes from it (%d of %d in the "
                     "window)\n",
                     static_cast<int>((ranks - 1) * nodes), survivors, recent,
                     options.maxRestarts);
        failedRank = firstLost;
        exitCode = 1;
        stopping = shrinking = true;
        stopDeadline = now + std::chrono::seconds(kShrinkSaveSeconds);
        return;
      }
      try {
        board->open(epoch + 1, world);
      } catch (const rtxrt::Error &error) {
        storeFailed(error, firstLost);
        return;
      }
      ++epoch;
      replaceLost(lost, survivors, recent);
    };

    while (true) {
      // Read whatever the ranks printed.
      std::vector<pollfd> fds;
      std::vector<std::pair<Child *, bool>> owners;
      for (Child &c : children) {
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

      // Reap ranks; the first failure stops the rest.
      for (Child &c : children) {
        if (c.exited)
          continue;
        int status;
        if (waitpid(c.pid, &status, WNOHANG) != c.pid)
          continue;
        c.exited = true;
        c.status = status;
        int code =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && board && failedRank < 0 && !stopping &&
            !epochJoined()) {
          // Lost while the epoch's rendezvous was under way: the others
          // wait in it for a rank that will not come. Restart every rank
          // (they hold nothing the newest checkpoint does not: no step ran
          // in this epoch).
          std::fprintf(stderr,
                       "rtx-launch: rank %d failed before epoch %lld of the "
                       "in-job recovery met; stopping the other ranks\n",
                       c.rank, static_cast<long long>(epoch));
          giveUp(c.rank, code, SIGKILL);
          continue;
        }
        if (code != 0 && board && failedRank < 0 && !stopping) {
          // In-job recovery: the others keep running; the loss is
          // collected below.
          c.lost = true;
          std::fprintf(stderr,
                       "rtx-launch: rank %d %s %d; in-job recovery: the "
                       "other ranks keep their state\n",
                       c.rank,
                       WIFEXITED(status) ? "exited with status"
                                         : "was killed by signal",
                       WIFEXITED(status) ? code : WTERMSIG(status));
          startCollecting();
          continue;
        }
        if (code != 0 && failedRank < 0 && !stopping) {
          failedRank = c.rank;
          exitCode = code;
          std::string what =
              std::string(WIFEXITED(status) ? "exited with status"
                                            : "was killed by signal") +
              " " + std::to_string(WIFEXITED(status) ? code : WTERMSIG(status));
          std::fprintf(stderr,
                       "rtx-launch: rank %d %s; stopping the other ranks\n",
                       c.rank, what.c_str());
          if (rounds) {
            try {
              rounds->failRound(round,
                                "rank " + std::to_string(c.rank) + " on node " +
                                    std::to_string(agentNode) + " " + what);
            } catch (const rtxrt::Error &error) {
              // The other nodes' ranks fail on their own (their
              // collectives time out) and restart into this round's next.
              std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
            }
          }
          stopRanks(SIGTERM);
        }
      }
      if (board && !stopping && failedRank < 0)
        collectLoss();
      if (rounds && !stopping &&
          std::chrono::steady_clock::now() >= nextRoundLook) {
        nextRoundLook =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
        std::optional<std::string> why;
        try {
          why = rounds->roundFailure(round);
        } catch (const rtxrt::Error &) {
          // The store is out for now: look again later.
        }
        if (why) {
          std::fprintf(stderr,
                       "rtx-launch: node %lld: round %d failed (%s); stopping "
                       "this node's ranks\n",
                       static_cast<long long>(agentNode), round, why->c_str());
          peerFailed = true;
          exitCode = 1;
          stopRanks(SIGTERM);
        } else if (std::optional<std::string> back = nodeBack(round, nodes)) {
          std::fprintf(stderr,
                       "rtx-launch: node %lld: growing: node %s is back; "
                       "pre-empting this node's ranks to restart with it\n",
                       static_cast<long long>(agentNode), back->c_str());
          growing = true;
          growBy = 0;
          stopRanks(SIGTERM);
        }
      }
      if (forwardedSignal && !stopping) {
        std::fprintf(stderr, "rtx-launch: forwarding signal %d to every rank\n",
                     static_cast<int>(forwardedSignal));
        exitCode = 128 + forwardedSignal;
        stopRanks(forwardedSignal);
      }
      if (growAfter >= 0 && !stopping &&
          std::chrono::steady_clock::now() - started >
              std::chrono::milliseconds(
                  static_cast<int64_t>(growAfter * 1000))) {
        std::fprintf(stderr,
                     "rtx-launch: growing: %d rank(s) for %g s; pre-empting "
                     "them to start again with %d\n",
                     ranks, growAfter, ranks + 1);
        growing = true;
        stopRanks(SIGTERM);
      }
      // A node offered ranks: grow at the next step boundary (the ranks
      // are pre-empted as for --grow-after), up to --max-ranks.
      if (joins && !stopping && !collecting && ranks < options.maxRanks &&
          std::chrono::steady_clock::now() >= nextOfferLook) {
        nextOfferLook =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
        std::optional<int64_t> offered;
        try {
          // Offers an earlier launch of this run id took are passed over.
          while ((offered = joins->offer(offersTaken)) &&
                 joins->offerTaken(offersTaken))
            ++offersTaken;
        } catch (const rtxrt::Error &error) {
          std::fprintf(stderr, "rtx-launch: warning: %s; ignoring it\n",
                       error.what());
          offered.reset();
          ++offersTaken;
        }
        bool mine = true;
        if (offered && epochJoined()) {
          try {
            mine = joins->takeOffer(offersTaken, launcherName());
          } catch (const rtxrt::Error &error) {
            std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
          }
        }
        if (offered && epochJoined() && !mine) {
          // Another launch of this run id took it a moment before.
          ++offersTaken;
        } else if (offered && epochJoined()) {
          growBy = static_cast<int>(
              std::min<int64_t>(*offered, options.maxRanks - ranks));
          std::fprintf(stderr,
                       "rtx-launch: growing: a node offered %lld rank(s) "
                       "(join.%lld); pre-empting the %d rank(s) to start "
                       "again with %d\n",
                       static_cast<long long>(*offered),
                       static_cast<long long>(offersTaken), ranks,
                       ranks + growBy);
          ++offersTaken;
          growing = true;
          stopRanks(SIGTERM);
        }
      }
      if (stopping && std::chrono::steady_clock::now() > stopDeadline) {
        stopAll(SIGKILL);
        stopDeadline = std::chrono::steady_clock::time_point::max();
      }
      // A node whose every rank was lost waits for the decision to replace
      // them (several nodes).
      bool allDone = !settled || stopping;
      for (Child &c : children)
        allDone = allDone && c.exited && c.out < 0 && c.err < 0;
      if (allDone)
        break;
    }
    // A forwarded SIGTERM that every rank answered by exiting 0 (a program
    // pre-empted: its checkpoint committed) ends the launch with 0.
    bool clean = true;
    for (Child &c : children)
      clean = clean && (c.replaced ||
                        (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0));
    if (failedRank < 0 && forwardedSignal && clean)
      exitCode = 0;
    // The ranks of a shrunk job may stop at the step boundary that the other
    // nodes' pre-emption chose before this agent saw the node that is back.
    if (!growing && !stopping && exitCode == 0 && !forwardedSignal &&
        nodeBack(round, nodes)) {
      growing = true;
      growBy = 0;
    }
    if (growing && failedRank < 0 && !forwardedSignal) {
      // A rank that did not commit and exit 0 (no --checkpoint, or the
      // run had finished its steps) is no growth.
      if (clean)
        return RoundEnd{0, false, true, growBy};
      std::fprintf(stderr, "rtx-launch: the ranks did not all exit 0 when "
                           "pre-empted to grow (does the program have "
                           "--checkpoint?)\n");
      return RoundEnd{1, true};
    }
    if (shrinking)
      return RoundEnd{exitCode, true, false, 0, true};
    return RoundEnd{exitCode, failedRank >= 0 || peerFailed};
  };

  // Rounds: the first, then a restart after each rank failure while the
  // budget lasts (--max-restarts in --restart-window seconds).
  int ranks = options.ranks;
  int exitCode = 0;
  std::string lastRunId = runId;
  // Several nodes: this agent starts in the round the others are in (an
  // agent that came back after its node was lost joins them).
  int firstRound = 0;
  if (rounds) {
    try {
      firstRound = static_cast<int>(
          rounds->enterRound(agentNode, agentNodes, launcherName()));
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
      return 1;
    }
    if (firstRound > 0)
      std::fprintf(stderr,
                   "rtx-launch: node %lld joins restart round %d of run %s, "
                   "resuming from the newest checkpoint\n",
                   static_cast<long long>(agentNode), firstRound,
                   runId.c_str());
  }
  int lastRound = firstRound;
  bool member = true; // this agent's ranks ran in the last round
  for (int round = firstRound;; ++round) {
    lastRound = round;
    if (rounds && round > firstRound) {
      try {
        rounds->startRound(round, agentNode, launcherName());
      } catch (const rtxrt::Error &error) {
        std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
      }
    }
    if (options.minNodes > 0) {
      // A round runs on the nodes whose agents came within --node-wait; the
      // first too, so a job starts on fewer nodes and the others join it.
      std::vector<int64_t> members;
      try {
        members = rounds->meetNodes(round, agentNodes, options.nodeWait,
                                    [] { return forwardedSignal != 0; });
      } catch (const rtxrt::Error &error) {
        std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
        exitCode = 1;
        break;
      }
      if (forwardedSignal) {
        exitCode = 128 + forwardedSignal;
        break;
      }
      std::string list;
      for (int64_t m : members)
        list += (list.empty() ? "" : ",") + std::to_string(m);
      auto at = std::find(members.begin(), members.end(), agentNode);
      member = at != members.end();
      if (!member) {
        exitCode = waitOutside(round, list);
        if (exitCode < 0)
          continue; // the members start the next round with this node
        break;
      }
      if (static_cast<int64_t>(members.size()) < options.minNodes) {
        std::fprintf(stderr,
                     "rtx-launch: error: round %d: node(s) %s came "
                     "within %g s, fewer than --min-nodes %d; stopping (the "
                     "newest committed checkpoint is kept)\n",
                     round, list.c_str(), options.nodeWait, options.minNodes);
        exitCode = 1;
        break;
      }
      node = at - members.begin();
      nodes = static_cast<int64_t>(members.size());
      std::fprintf(stderr,
                   "rtx-launch: node %lld: round %d runs on %lld of "
                   "%lld node(s) (%s) with %lld rank(s); this node's are "
                   "ranks %lld to %lld\n",
                   static_cast<long long>(agentNode), round,
                   static_cast<long long>(nodes),
                   static_cast<long long>(agentNodes), list.c_str(),
                   static_cast<long long>(nodes * ranks),
                   static_cast<long long>(node * ranks),
                   static_cast<long long>(node * ranks + ranks - 1));
    }
    std::string roundRunId =
        round == 0 ? roundsRunId
                   : roundsRunId + "-round" + std::to_string(round);
    if (round > 0 && !options.trace.empty() && node == 0)
      archiveRoundTraces(options.trace, round - 1);
    lastRunId = roundRunId;
    std::string planned;
    // Another world than the one given (fewer or more ranks, or nodes).
    if (!options.replan.model.empty() &&
        ranks * nodes != options.ranks * agentNodes) {
      if (options.replan.cache.empty())
        options.replan.cache = "/tmp/rtx-replan-" + runId;
      try {
        planned = rtxlaunch::programForWorld(options.replan,
                                             ranks * static_cast<int>(nodes));
      } catch (const rtxrt::Error &error) {
        std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
        exitCode = 1;
        break;
      }
    }
    RoundEnd end =
        runRound(ranks, round, roundRunId,
                 ranks < options.ranks ? options.growAfter : -1.0, planned);
    exitCode = end.exitCode;
    if (end.grew && end.grewBy == 0) {
      std::fprintf(stderr,
                   "rtx-launch: restart %d with the node that is back, "
                   "resuming from the newest checkpoint\n",
                   round + 1);
      continue;
    }
    if (end.grew) {
      ranks += end.grewBy;
      std::fprintf(stderr,
                   "rtx-launch: restart %d with %d rank(s) (grown%s), "
                   "resuming from the newest checkpoint\n",
                   round + 1, ranks * static_cast<int>(nodes),
                   ranks <= options.ranks ? " back" : "");
      continue;
    }
    if (end.shrunk && !forwardedSignal) {
      // Counted against the budget when the loss was collected.
      --ranks;
      std::fprintf(stderr,
                   "rtx-launch: restart %d with %d rank(s) (shrunk), resuming "
                   "from the newest checkpoint\n",
                   round + 1, ranks * static_cast<int>(nodes));
      continue;
    }
    if (!end.rankFailed || options.maxRestarts == 0 || forwardedSignal)
      break;
    failures.push_back(std::chrono::steady_clock::now());
    int recent = recentFailures();
    if (recent > options.maxRestarts) {
      std::fprintf(stderr,
                   "rtx-launch: error: %d failure(s) in the last %g s, more "
                   "than --max-restarts %d allows; stopping (the newest "
                   "committed checkpoint is kept)\n",
                   recent, options.restartWindow, options.maxRestarts);
      if (rounds) {
        // The other nodes stop too, rather than wait in the next round's
        // rendezvous for this node.
        try {
          rounds->failRound(round + 1, "node " + std::to_string(agentNode) +
                                           " stopped: its restart budget "
                                           "ran out");
        } catch (const rtxrt::Error &) {
        }
      }
      break;
    }
    if (options.minRanks > 0 && ranks > options.minRanks)
      --ranks;
    // Backoff: 0.5 s, doubling per recent failure, at most 8 s; a signal
    // ends it (and the launch).
    double backoff = std::min(8.0, 0.5 * double(1 << std::min(recent - 1, 4)));
    char on[96];
    if (options.minNodes > 0)
      std::snprintf(on, sizeof on, "on the nodes that come within %g s",
                    options.nodeWait);
    else
      std::snprintf(on, sizeof on, "with %d rank(s)",
                    ranks * static_cast<int>(nodes));
    std::fprintf(stderr,
                 "rtx-launch: restart %d (%d of %d in the window) in %.1f s "
                 "%s, resuming from the newest checkpoint\n",
                 round + 1, recent, options.maxRestarts, backoff, on);
    for (double waited = 0; waited < backoff && !forwardedSignal;
         waited += 0.05)
      usleep(50000);
    if (forwardedSignal)
      break;
  }
  if (rounds && options.minNodes > 0) {
    // An agent waiting outside the last round stops with the job.
    try {
      rounds->endJob(lastRound, exitCode);
    } catch (const rtxrt::Error &) {
    }
  }
  int64_t world = int64_t(ranks) * nodes;
  // One timeline of the ranks' traces, also after a failure (the trace of
  // a failed run is the one most worth reading).
  if (!options.trace.empty() && node == 0 && member) {
    try {
      rtxrt::MergedTrace merged =
          rtxrt::mergeRankTraces(options.trace, world, lastRunId);
      std::string missing;
      for (int64_t r : merged.missing)
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      for (int64_t r : merged.stale)
        std::fprintf(stderr,
                     "rtx-launch: warning: %s/rank-%lld.trace.json is from "
                     "another run; not merged\n",
                     options.trace.c_str(), static_cast<long long>(r));
      std::fprintf(stderr,
                   "rtx-launch: merged the traces of %zu rank(s) "
                   "into %s%s%s\n",
                   merged.ranks.size(), merged.path.c_str(),
                   missing.empty() ? "" : "; no trace from rank(s) ",
                   missing.c_str());
    } catch (const rtxrt::Error &error) {
      std::fprintf(stderr, "rtx-launch: error: cannot merge the traces: %s\n",
                   error.what());
      if (exitCode == 0)
        exitCode = 1;
    }
  }
  return exitCode;
}
