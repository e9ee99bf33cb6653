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

#include "Replan.h"

#include "rtxrt/LaunchEnvironment.h"
#include "rtxrt/RecoveryBoard.h"
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

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
  /// processes and state (rtxrt/RecoveryBoard.h); ranks that lost a peer
  /// and reported it within recoverWindow seconds are survivors.
  bool inJob = false;
  double recoverWindow = 3;
  /// Offers of ranks (rtx-launch --join K, through the store): a job below
  /// maxRanks (default: -n) grows by the ranks offered, at a step boundary.
  int maxRanks = 0;
  /// --join K: this launcher only offers K ranks to the job --run-id.
  int join = 0;
  std::vector<std::string> program;
};

[[noreturn]] void usage(const std::string &error) {
  if (!error.empty())
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.c_str());
  std::fprintf(
      stderr,
      "usage: rtx-launch -n N [--nnodes M --node-rank I] "
      "[--store file:DIR | redis://HOST:PORT]\n"
      "                  [--devices LIST] [--run-id ID] [--grace SECONDS]\n"
      "                  [--max-restarts R [--restart-window S] "
      "[--min-ranks M [--grow-after S]]]\n"
      "                  [--max-ranks X]\n"
      "                  [--recover in-job|restart [--recover-window S]]\n"
      "                  [--trace DIR [--trace-steps A:B]] -- "
      "PROGRAM [ARGS...]\n"
      "       rtx-launch --join K --store STORE --run-id ID\n"
      "  Starts N ranks of PROGRAM on this machine with RANK, "
      "WORLD_SIZE,\n  LOCAL_RANK, LOCAL_WORLD_SIZE and RTX_STORE set; "
      "prefixes their output\n  with their rank; stops all ranks when "
      "one fails and exits with its status.\n"
      "  --nnodes M --node-rank I: this is node I of M, each running "
      "N ranks\n  (default: from NODE_RANK/NNODES, SLURM_NODEID/"
      "SLURM_NNODES or mpirun).\n"
      "  --devices cuda:3,cuda:5: local rank r runs on the r-th "
      "device (RTX_DEVICES).\n"
      "  --run-id ID: the run's id, the same on every node (default "
      "RTX_RUN_ID, the\n  outer launcher's job id, or one per launch "
      "on one node).\n"
      "  --trace DIR [--trace-steps A:B]: every rank writes its trace "
      "into DIR\n  (RTX_TRACE); at the end they are merged into "
      "DIR/trace.json on one\n  timeline (node 0 merges the traces "
      "that DIR holds).\n"
      "  --grace S: seconds between SIGTERM and SIGKILL when stopping ranks "
      "(default 5);\n  a pre-empted program (SIGTERM) saves its checkpoint "
      "within it.\n"
      "  --max-restarts R: when a rank fails, start the ranks again with "
      "--resume\n  (the program's --checkpoint DIR), at most R times in "
      "--restart-window S\n  seconds (default 600), with a backoff; each "
      "round has its own run id.\n"
      "  --min-ranks M: each restart has one rank fewer, down to M; "
      "'{world}' in the\n  program's arguments becomes the number of "
      "ranks (a program per world size).\n"
      "  --grow-after S: a shrunk job grows back one rank at a time: after "
      "S seconds\n  with fewer than N ranks, the ranks are pre-empted "
      "(they commit a checkpoint\n  at a step boundary: the program needs "
      "--checkpoint) and restarted with one more.\n"
      "  --join K --store STORE --run-id ID: offers K more ranks (a node "
      "that is back,\n  or a new one) to the running job ID and exits; the "
      "job grows by them at\n  its next step boundary (pre-empted as "
      "above), up to its --max-ranks X\n  (default N; more than N needs "
      "'{world}' or --replan, --store and --run-id).\n"
      "  --replan MODEL.mlir [--replan-profile P] [--replan-options 'lr=..'] "
      "[--replan-cache DIR]:\n  a restart to another number of ranks runs "
      "a program planned for it by\n  rtx-auto-partition on profile P "
      "(default cpu-host), built once into DIR\n  (default "
      "/tmp/rtx-replan-RUN) as world-W/program; it takes the place of the "
      "first\n  argument that names an executable file (a path with a "
      "'/').\n"
      "  --recover in-job: a failed rank is replaced in the running job: the "
      "others keep\n  their processes and state, report the loss in the "
      "store and meet the\n  replacement in a new rendezvous epoch, which "
      "takes the state from a\n  survivor (or every rank the newest "
      "checkpoint); needs --store and\n  --max-restarts R (each replacement "
      "counts). A rank that reports no loss\n  within --recover-window S "
      "seconds (default 3) of the first is replaced\n  too. With "
      "--min-ranks M the job shrinks instead while above M: the\n  "
      "survivors save the newest step they hold as a checkpoint and the "
      "job\n  resumes from it with one rank fewer. --recover restart (the "
      "default):\n  every rank is restarted.\n");
  std::exit(2);
}

/// Moves the traces and per-rank metrics a round left in DIR
/// (rank-R.trace.json, rank-R.metrics.jsonl) into DIR/round-K, so that the
/// next round does not overwrite them: the failed round's traces say when
/// the failure was found, the next round's when training resumed.
void archiveRoundTraces(const std::string &dir, int round) {
  std::string into = dir + "/round-" + std::to_string(round);
  if (mkdir(into.c_str(), 0755) != 0 && errno != EEXIST)
    return;
  DIR *listing = opendir(dir.c_str());
  if (!listing)
    return;
  auto endsWith = [](const std::string &s, const std::string &end) {
    return s.size() >= end.size() &&
           s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  while (dirent *entry = readdir(listing)) {
    std::string name = entry->d_name;
    if (name.rfind("rank-", 0) == 0 &&
        (endsWith(name, ".trace.json") || endsWith(name, ".metrics.jsonl")))
      rename((dir + "/" + name).c_str(), (into + "/" + name).c_str());
  }
  closedir(listing);
}

/// How long the survivors of a shrinking job may take to save their state
/// (each waits at most its rendezvous timeout for the others) before they
/// are killed and the job resumes from the newest committed checkpoint.
constexpr int kShrinkSaveSeconds = 300;

/// The most ranks one launcher starts: each is a process with two pipes,
/// and a node holds far fewer ranks than this in practice.
constexpr long kMaxLocalRanks = 4096;

int parseNumber(const std::string &flag, const std::string &value, long low,
                const std::string &what) {
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || n < low ||
      n > (1l << 20))
    usage(flag + " needs " + what + ", got '" + value + "'");
  return static_cast<int>(n);
}
int parseRanks(const std::string &flag, const std::string &value) {
  int n = parseNumber(flag, value, 1, "a positive number of ranks");
  if (n > kMaxLocalRanks)
    usage(flag + " " + value + " is more than the " +
          std::to_string(kMaxLocalRanks) +
          " ranks one rtx-launch starts; start one launcher per node");
  return n;
}

/// Seconds in [0, max] (in (0, max] without `allowZero`).
double parseSeconds(const std::string &flag, const std::string &value,
                    bool allowZero, double max) {
  char *end = nullptr;
  double seconds = std::strtod(value.c_str(), &end);
  // NaN compares false, so test for the accepted range, not against it.
  bool inRange = (allowZero ? seconds >= 0 : seconds > 0) && seconds <= max;
  if (value.empty() || *end != '\0' || !inRange) {
    char range[64];
    std::snprintf(range, sizeof range, "%s0, %g]", allowZero ? "[" : "(", max);
    usage(flag + " needs a number of seconds in " + range + ", got '" + value +
          "'");
  }
  return seconds;
}

Options parse(int argc, char **argv) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help")
      usage("");
    if (arg == "-n" || arg == "--nproc")
      options.ranks = parseRanks(arg, value());
    else if (arg == "--store")
      options.store = value();
    else if (arg == "--nnodes")
      options.nodes =
          parseNumber(arg, value(), 1, "a positive number of nodes");
    else if (arg == "--node-rank")
      options.nodeRank =
          parseNumber(arg, value(), 0, "a node index (0, 1, ...)");
    else if (arg == "--devices")
      options.devices = value();
    else if (arg == "--run-id")
      options.runId = value();
    else if (arg == "--grace")
      options.graceSeconds = parseSeconds(arg, value(), true, 3600);
    else if (arg == "--max-restarts")
      options.maxRestarts =
          parseNumber(arg, value(), 0, "a number of restarts (0, 1, ...)");
    else if (arg == "--restart-window")
      options.restartWindow = parseSeconds(arg, value(), false, 86400 * 7);
    else if (arg == "--min-ranks")
      options.minRanks = parseRanks(arg, value());
    else if (arg == "--replan")
      options.replan.model = value();
    else if (arg == "--replan-profile")
      options.replan.profile = value();
    else if (arg == "--replan-options")
      options.replan.distribute = value();
    else if (arg == "--replan-cache")
      options.replan.cache = value();
    else if (arg == "--recover") {
      std::string mode = value();
      if (mode != "in-job" && mode != "restart")
        usage("--recover is in-job or restart, got '" + mode + "'");
      options.inJob = mode == "in-job";
    } else if (arg == "--recover-window")
      options.recoverWindow = parseSeconds(arg, value(), false, 3600);
    else if (arg == "--max-ranks")
      options.maxRanks = parseRanks(arg, value());
    else if (arg == "--join")
      options.join = parseRanks(arg, value());
    else if (arg == "--grow-after")
      options.growAfter = parseSeconds(arg, value(), false, 86400 * 7);
    else if (arg == "--trace") {
      options.trace = value();
      if (options.trace.empty())
        usage("--trace needs a directory, got an empty one");
    } else if (arg == "--trace-steps")
      options.traceSteps = value();
    else
      usage("unknown flag '" + arg + "' (put the program after --)");
  }
  for (; i < argc; ++i)
    options.program.push_back(argv[i]);
  if (options.join > 0) {
    // Only an offer: nothing is started.
    if (options.store.empty() || options.runId.empty())
      usage("--join offers ranks to a running job through its store: it "
            "needs --store and the job's --run-id");
    if (options.ranks > 0 || !options.program.empty())
      usage("--join offers ranks to a running job and starts none: give no "
            "-n and no program");
    return options;
  }
  if (options.ranks == 0)
    usage("-n N is required");
  if (options.program.empty())
    usage("no program to launch: give it after --");
  if (!options.traceSteps.empty() && options.trace.empty())
    usage("--trace-steps needs --trace DIR");
  if (!options.traceSteps.empty()) {
    rtxrt::TraceOptions steps;
    try {
      rtxrt::TraceOptions::parseSteps(options.traceSteps, steps);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
  if (options.maxRanks == 0)
    options.maxRanks = options.ranks;
  if (options.minRanks > options.ranks)
    usage("--min-ranks " + std::to_string(options.minRanks) +
          " is more than -n " + std::to_string(options.ranks));
  if (options.minRanks > 0 && options.maxRestarts == 0)
    usage("--min-ranks shrinks the job at a restart: it needs "
          "--max-restarts N");
  bool replanFlags = options.replan.profile != "cpu-host" ||
                     !options.replan.distribute.empty() ||
                     !options.replan.cache.empty();
  if (options.replan.model.empty() && replanFlags)
    usage("--replan-profile, --replan-options and --replan-cache go with "
          "--replan MODEL.mlir");
  if (!options.replan.model.empty()) {
    if (options.minRanks == 0 && options.maxRanks <= options.ranks)
      usage("--replan plans the program of a shrunk or grown job: it needs "
            "--min-ranks M or --max-ranks X");
    if (access(options.replan.model.c_str(), R_OK) != 0)
      usage("--replan: cannot read the model " + options.replan.model + ": " +
            std::strerror(errno));
  }
  if (options.maxRanks < options.ranks)
    usage("--max-ranks " + std::to_string(options.maxRanks) +
          " is less than -n " + std::to_string(options.ranks));
  if (options.maxRanks > options.ranks) {
    bool perWorld = !options.replan.model.empty();
    for (const std::string &arg : options.program)
      perWorld = perWorld || arg.find("{world}") != std::string::npos;
    if (!perWorld)
      usage("--max-ranks grows the job beyond -n: the program's arguments "
            "need '{world}' (a program per world size) or --replan MODEL");
    if (options.store.empty() || options.runId.empty())
      usage("--max-ranks grows the job when a node offers ranks (rtx-launch "
            "--join) through the store: it needs --store and --run-id");
    if (options.nodes > 1)
      usage("--max-ranks grows the ranks of one node; a job of several nodes "
            "is grown by its outer launcher");
  }
  if (options.growAfter >= 0 && options.minRanks == 0)
    usage("--grow-after grows back a job that --min-ranks shrank: it needs "
          "--min-ranks M");
  if (options.maxRestarts > 0 && options.nodes > 1)
    usage("--max-restarts restarts the ranks of one node; a job of several "
          "nodes is restarted by its outer launcher");
  if (options.inJob) {
    if (options.maxRestarts == 0)
      usage("--recover in-job replaces failed ranks within the restart "
            "budget: it needs --max-restarts R");
    if (options.store.empty())
      usage("--recover in-job meets the survivors again through the store: "
            "it needs --store file:DIR or redis://HOST:PORT");
    if (options.ranks < 2)
      usage("--recover in-job needs survivors: -n 2 or more (one rank is "
            "restarted)");
  }
  if ((options.nodes > 0) != (options.nodeRank >= 0))
    usage("--nnodes and --node-rank go together");
  if (options.nodeRank >= options.nodes && options.nodes > 0)
    usage("--node-rank " + std::to_string(options.nodeRank) +
          " is outside [0, " + std::to_string(options.nodes) + ")");
  if (!options.devices.empty()) {
    size_t listed = 1;
    for (char c : options.devices)
      listed += c == ',';
    if (listed != static_cast<size_t>(options.ranks))
      usage("--devices lists " + std::to_string(listed) + " device(s) for " +
            std::to_string(options.ranks) + " ranks: list one per rank");
  }
  if (!options.store.empty() && options.store.rfind("file:", 0) != 0 &&
      options.store.rfind("redis://", 0) != 0)
    usage("--store must be file:DIR or redis://HOST:PORT, got '" +
          options.store + "'");
  return options;
}

volatile sig_atomic_t forwardedSignal = 0;
void onSignal(int signal) { forwardedSignal = signal; }

struct Child {
  pid_t pid = -1;
  int rank = 0, local = 0;
  /// In-job recovery lost it (died, or hung and killed); `replaced` once a
  /// replacement runs in its place (a later entry).
  bool lost = false, replaced = false;
  int out = -1, err = -1;
  std::string outBuffer, errBuffer;
  bool exited = false;
  int status = 0;
};

/// Prints complete lines of `buffer` prefixed with the rank.
void flushLines(std::string &buffer, int rank, FILE *stream, bool all) {
  size_t start = 0, newline;
  while ((newline = buffer.find('\n', start)) != std::string::npos) {
    std::fprintf(stream, "[rank %d] %.*s\n", rank,
                 static_cast<int>(newline - start), buffer.data() + start);
    start = newline + 1;
  }
  buffer.erase(0, start);
  if (all && !buffer.empty()) {
    std::fprintf(stream, "[rank %d] %s\n", rank, buffer.c_str());
    buffer.clear();
  }
  std::fflush(stream);
}

/// Whether process `pid` is stopped (SIGSTOP, a debugger): it cannot
/// answer anything until continued.
bool isStopped(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE *file = std::fopen(path.c_str(), "r");
  if (!file)
    return false;
  char text[512] = {0};
  size_t n = std::fread(text, 1, sizeof text - 1, file);
  std::fclose(file);
  // "PID (COMMAND) STATE ...": the command may hold spaces and parentheses.
  const char *close = std::strrchr(text, ')');
  return n > 0 && close && close[1] == ' ' &&
         (close[2] == 'T' || close[2] == 't');
}

/// Stops ranks started before a launch failed: SIGTERM to each one's
/// process group, SIGKILL after `graceSeconds`, and reaps them, so that no
/// rank outlives its launcher (it would wait for the missing ones, holding
/// a port and the store, until its timeout).
void stopStarted(std::vector<Child> &children, double graceSeconds) {
  for (Child &c : children) {
    kill(-c.pid, SIGTERM);
    for (int fd : {c.out, c.err})
      if (fd >= 0)
        close(fd);
  }
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(graceSeconds * 1000));
  size_t left = children.size();
  bool killed = false;
  while (left > 0) {
    for (Child &c : children)
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        --left;
      }
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      for (Child &c : children)
        if (!c.exited)
          kill(-c.pid, SIGKILL);
      killed = true;
    }
    if (left > 0)
      usleep(20000);
  }
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  if (options.join > 0) {
    // A node offers ranks to a running job (it grows at a step boundary).
    try {
      char host[256] = "?";
      gethostname(host, sizeof host - 1);
      rtxrt::RecoveryBoard board(options.store, options.runId);
      int64_t n = board.offerRanks(options.join, std::string(host) + ":" +
                                                     std::to_string(getpid()));
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
  if (runId.empty())
    runId = std::to_string(getpid()) + "-" +
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
  std::optional<rtxrt::RecoveryBoard> joins;
  int64_t offersTaken = 0;
  if (!options.store.empty() &&
      (options.minRanks > 0 || options.maxRanks > options.ranks)) {
    try {
      joins.emplace(options.store, runId);
    } catch (const rtxrt::Error &error) {
      usage(error.what());
    }
  }
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
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(err[0]);
        setenv("RANK", std::to_string(rank).c_str(), 1);
        setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
        setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
        setenv("LOCAL_WORLD_SIZE", std::to_string(ranks).c_str(), 1);
        setenv("RTX_RESTART_ROUND", std::to_string(round).c_str(), 1);
        if (options.inJob) {
          setenv("RTX_RECOVER", "in-job", 1);
          setenv("RTX_RECOVER_EPOCH", std::to_string(epoch).c_str(), 1);
        }
        if (!options.store.empty())
          setenv("RTX_STORE", options.store.c_str(), 1);
        if (!options.devices.empty())
          setenv("RTX_DEVICES", options.devices.c_str(), 1);
        // Which launcher set RANK (the program's first line says it).
        setenv("RTX_LAUNCHER", "rtx-launch", 1);
        if (!options.trace.empty()) {
          setenv("RTX_TRACE", options.trace.c_str(), 1);
          if (!options.traceSteps.empty())
            setenv("RTX_TRACE_STEPS", options.traceSteps.c_str(), 1);
        }
        // The node placement is now in RANK; an outer launcher's NODE_RANK
        // etc. stay for the program, which does not read them as its own.
        setenv("RTX_RUN_ID", roundRunId.c_str(), 1);
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
    // In-job recovery (--recover in-job): the epoch the ranks run in, and
    // while a loss is being collected, until when survivors may report.
    std::optional<rtxrt::RecoveryBoard> board;
    if (options.inJob)
      board.emplace(options.store, roundRunId);
    int64_t epoch = 0;
    bool collecting = false;
    auto reportDeadline = std::chrono::steady_clock::time_point::max();

    int exitCode = 0;
    int failedRank = -1;
    bool stopping = false, growing = false, shrinking = false;
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

    // Ends the round as a failure of `rank` with `code`: `signal` to every
    // rank (SIGKILL after --grace), and the restart path decides.
    auto giveUp = [&](int rank, int code, int signal) {
      failedRank = rank;
      exitCode = code;
      stopping = true;
      stopAll(signal);
      stopDeadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(
                         static_cast<int>(options.graceSeconds * 1000));
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
      reportDeadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int64_t>(options.recoverWindow * 1000));
    };
    // In-job recovery: once a rank died or a survivor reported a lost peer,
    // every other running rank has --recover-window seconds to report too
    // (a stopped process cannot: it counts as lost at once). Then those
    // that did not are killed, the next epoch is opened and the lost ranks
    // are replaced. With no survivor, or no rank lost (every one reported:
    // a cut link), every rank restarts as without --recover in-job.
    auto collectLoss = [&] {
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
          std::fprintf(stderr, "rtx-launch: error: %s; every rank restarts\n",
                       error.what());
          giveUp(firstLost, 1, SIGTERM);
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
        std::fprintf(stderr, "rtx-launch: error: %s; every rank restarts\n",
                     error.what());
        giveUp(firstLost, 1, SIGTERM);
        return;
      }
      ++epoch;
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
          std::fprintf(
              stderr, "rtx-launch: rank %d %s %d; stopping the other ranks\n",
              c.rank,
              WIFEXITED(status) ? "exited with status" : "was killed by signal",
              WIFEXITED(status) ? code : WTERMSIG(status));
          stopping = true;
          stopAll(SIGTERM);
          stopDeadline = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(
                             static_cast<int>(options.graceSeconds * 1000));
        }
      }
      if (board && !stopping && failedRank < 0)
        collectLoss();
      if (forwardedSignal && !stopping) {
        std::fprintf(stderr, "rtx-launch: forwarding signal %d to every rank\n",
                     static_cast<int>(forwardedSignal));
        stopping = true;
        exitCode = 128 + forwardedSignal;
        stopAll(forwardedSignal);
        stopDeadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int>(options.graceSeconds * 1000));
      }
      if (growAfter >= 0 && !stopping &&
          std::chrono::steady_clock::now() - started >
              std::chrono::milliseconds(
                  static_cast<int64_t>(growAfter * 1000))) {
        std::fprintf(stderr,
                     "rtx-launch: growing: %d rank(s) for %g s; pre-empting "
                     "them to start again with %d\n",
                     ranks, growAfter, ranks + 1);
        stopping = growing = true;
        stopAll(SIGTERM);
        stopDeadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int>(options.graceSeconds * 1000));
      }
      // A node offered ranks: grow at the next step boundary (the ranks
      // are pre-empted as for --grow-after), up to --max-ranks.
      if (joins && !stopping && !collecting && ranks < options.maxRanks &&
          std::chrono::steady_clock::now() >= nextOfferLook) {
        nextOfferLook =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
        std::optional<int64_t> offered;
        try {
          offered = joins->offer(offersTaken);
        } catch (const rtxrt::Error &error) {
          std::fprintf(stderr, "rtx-launch: warning: %s; ignoring it\n",
                       error.what());
          ++offersTaken;
        }
        if (offered && epochJoined()) {
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
          stopping = growing = true;
          stopAll(SIGTERM);
          stopDeadline = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(
                             static_cast<int>(options.graceSeconds * 1000));
        }
      }
      if (stopping && std::chrono::steady_clock::now() > stopDeadline) {
        stopAll(SIGKILL);
        stopDeadline = std::chrono::steady_clock::time_point::max();
      }
      bool allDone = true;
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
    return RoundEnd{exitCode, failedRank >= 0};
  };

  // Rounds: the first, then a restart after each rank failure while the
  // budget lasts (--max-restarts in --restart-window seconds).
  int ranks = options.ranks;
  int exitCode = 0;
  std::string lastRunId = runId;
  for (int round = 0;; ++round) {
    std::string roundRunId =
        round == 0 ? runId : runId + "-round" + std::to_string(round);
    if (round > 0 && !options.trace.empty() && node == 0)
      archiveRoundTraces(options.trace, round - 1);
    lastRunId = roundRunId;
    std::string planned;
    if (!options.replan.model.empty() && ranks != options.ranks) {
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
      break;
    }
    if (options.minRanks > 0 && ranks > options.minRanks)
      --ranks;
    // Backoff: 0.5 s, doubling per recent failure, at most 8 s; a signal
    // ends it (and the launch).
    double backoff = std::min(8.0, 0.5 * double(1 << std::min(recent - 1, 4)));
    std::fprintf(stderr,
                 "rtx-launch: restart %d (%d of %d in the window) in %.1f s "
                 "with %d rank(s), resuming from the newest checkpoint\n",
                 round + 1, recent, options.maxRestarts, backoff,
                 ranks * static_cast<int>(nodes));
    for (double waited = 0; waited < backoff && !forwardedSignal;
         waited += 0.05)
      usleep(50000);
    if (forwardedSignal)
      break;
  }
  int64_t world = int64_t(ranks) * nodes;
  // One timeline of the ranks' traces, also after a failure (the trace of
  // a failed run is the one most worth reading).
  if (!options.trace.empty() && node == 0) {
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
