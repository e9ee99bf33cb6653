//===- LaunchOptions.cpp - rtx-launch's command line ----------------------===//

#include "LaunchOptions.h"

#include "rtxrt/core/Tensor.h"
#include "rtxrt/observe/Trace.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace rtxlaunch;

[[noreturn]] void rtxlaunch::usage(const std::string &error) {
  if (!error.empty())
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.c_str());
  std::fprintf(
      stderr,
      "usage: rtx-launch -n N [--nnodes M --node-rank I] "
      "[--store file:DIR | redis://HOST:PORT]\n"
      "                  [--devices LIST] [--run-id ID] [--grace SECONDS]\n"
      "                  [--max-restarts R [--restart-window S] "
      "[--min-ranks M [--grow-after S]]\n"
      "                   [--min-nodes K [--node-wait S]]]\n"
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
      "  --min-nodes K: several nodes (--nnodes M, the most) run each round, "
      "the first\n  too, on the nodes whose agent starts it within --node-wait "
      "S seconds\n  (default 10), if at least K ('{world}' or --replan as for "
      "--min-ranks); a\n  node started later (back, or new) is taken in at "
      "the next step boundary\n  (the ranks are pre-empted: the program "
      "needs --checkpoint), which counts as\n  no failure.\n"
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
      "job\n  resumes from it with one rank fewer. On several nodes "
      "(--nnodes), each\n  agent collects its own ranks and node 0's "
      "decides; a node that does not\n  answer within --recover-window + "
      "10 s restarts every rank. --recover\n  restart (the default): every "
      "rank is restarted.\n");
  std::exit(2);
}

namespace {

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

/// Whether another world size runs another program: '{world}' in its
/// arguments, or one --replan plans.
bool hasProgramPerWorld(const Options &options) {
  if (!options.replan.model.empty())
    return true;
  for (const std::string &arg : options.program)
    if (arg.find("{world}") != std::string::npos)
      return true;
  return false;
}

} // namespace

Options rtxlaunch::parse(int argc, char **argv) {
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
    else if (arg == "--min-nodes")
      options.minNodes =
          parseNumber(arg, value(), 1, "a positive number of nodes");
    else if (arg == "--node-wait") {
      options.nodeWait = parseSeconds(arg, value(), false, 3600);
      options.nodeWaitGiven = true;
    } else if (arg == "--replan")
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
    if (options.minRanks == 0 && options.minNodes == 0 &&
        options.maxRanks <= options.ranks)
      usage("--replan plans the program of a shrunk or grown job: it needs "
            "--min-ranks M, --min-nodes K or --max-ranks X");
    if (access(options.replan.model.c_str(), R_OK) != 0)
      usage("--replan: cannot read the model " + options.replan.model + ": " +
            std::strerror(errno));
  }
  if (options.maxRanks < options.ranks)
    usage("--max-ranks " + std::to_string(options.maxRanks) +
          " is less than -n " + std::to_string(options.ranks));
  if (options.maxRanks > options.ranks) {
    if (!hasProgramPerWorld(options))
      usage("--max-ranks grows the job beyond -n: the program's arguments "
            "need '{world}' (a program per world size) or --replan MODEL");
    if (options.store.empty() || options.runId.empty())
      usage("--max-ranks grows the job when a node offers ranks (rtx-launch "
            "--join) through the store: it needs --store and --run-id");
    if (options.nodes > 1)
      usage("--max-ranks grows the ranks of one node; a job of several nodes "
            "is grown by its outer launcher");
  }
  if (options.nodeWaitGiven && options.minNodes == 0)
    usage("--node-wait is how long a restart waits for the nodes of a job "
          "that shrinks by nodes: it needs --min-nodes K");
  if (options.minNodes > 0) {
    if (options.minRanks > 0)
      usage("--min-nodes shrinks a job of several nodes by whole nodes, "
            "--min-ranks one node by ranks: give one of them");
    if (options.maxRestarts == 0)
      usage("--min-nodes shrinks the job at a restart: it needs "
            "--max-restarts R");
    if (!hasProgramPerWorld(options))
      usage("--min-nodes runs the job on fewer nodes: the program's "
            "arguments need '{world}' (a program per world size) or "
            "--replan MODEL");
  }
  if (options.growAfter >= 0 && options.minRanks == 0)
    usage("--grow-after grows back a job that --min-ranks shrank: it needs "
          "--min-ranks M");
  if (options.inJob) {
    if (options.maxRestarts == 0)
      usage("--recover in-job replaces failed ranks within the restart "
            "budget: it needs --max-restarts R");
    if (options.store.empty())
      usage("--recover in-job meets the survivors again through the store: "
            "it needs --store file:DIR or redis://HOST:PORT");
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

void rtxlaunch::checkNodes(const Options &options, int64_t nodes) {
  if (options.minNodes > 0 && nodes < 2)
    usage("--min-nodes shrinks a job of several nodes (--nnodes M, or an "
          "outer launcher's); this one runs on one node: use --min-ranks");
  if (options.minNodes > nodes)
    usage("--min-nodes " + std::to_string(options.minNodes) +
          " is more than the job's " + std::to_string(nodes) + " nodes");
  if (options.inJob && options.ranks * nodes < 2)
    usage("--recover in-job needs survivors: 2 ranks or more in the job (one "
          "rank is restarted)");
  if (nodes <= 1 || options.maxRestarts == 0)
    return;
  if (options.store.empty())
    usage("--max-restarts on several nodes restarts them together through a "
          "store every node reaches: it needs --store redis://HOST:PORT (or "
          "file:DIR on a file system every node mounts)");
  if (options.minRanks > 0)
    usage("--min-ranks shrinks the ranks of one node; a job of several nodes "
          "shrinks by whole nodes (--min-nodes K)");
}
