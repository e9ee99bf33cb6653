//===- LaunchOptions.cpp - rtx-launch's command line ----------------------===//
//
// Every option is declared once, in flagTable(): its names, the kind of
// value it takes (which parses and checks it), and its help. The rules that
// tie options together are a second table, checked in order. usage() prints
// the help from the same tables.
//
//===----------------------------------------------------------------------===//

#include "LaunchOptions.h"

#include "rtxrt/core/Tensor.h"
#include "rtxrt/observe/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <unistd.h>

using namespace rtxlaunch;

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

/// Parses and checks one flag's value into the options.
using Setter = std::function<void(Options &, const std::string &flag,
                                  const std::string &value)>;

// The kinds of value, each a setter of one member.
Setter ranks(int Options::*member) {
  return [member](Options &o, const std::string &flag, const std::string &v) {
    int n = parseNumber(flag, v, 1, "a positive number of ranks");
    if (n > kMaxLocalRanks)
      usage(flag + " " + v + " is more than the " +
            std::to_string(kMaxLocalRanks) +
            " ranks one rtx-launch starts; start one launcher per node");
    o.*member = n;
  };
}
Setter number(int Options::*member, long low, const char *what) {
  return [=](Options &o, const std::string &flag, const std::string &v) {
    o.*member = parseNumber(flag, v, low, what);
  };
}
Setter seconds(double Options::*member, bool allowZero, double max) {
  return [=](Options &o, const std::string &flag, const std::string &v) {
    o.*member = parseSeconds(flag, v, allowZero, max);
  };
}
Setter text(std::string Options::*member) {
  return [member](Options &o, const std::string &, const std::string &v) {
    o.*member = v;
  };
}
Setter replanText(std::string ReplanOptions::*member) {
  return [member](Options &o, const std::string &, const std::string &v) {
    o.replan.*member = v;
  };
}

struct Flag {
  std::vector<std::string> names;
  const char *value; ///< what it takes, for the help; null: a switch
  const char *help;
  Setter set;
};

constexpr double kWeek = 86400 * 7;
/// Where the help of each option starts.
constexpr size_t kHelpColumn = 30;

/// Where the ranks run and what they are handed.
std::vector<Flag> placementFlags() {
  return {
      {{"-n", "--nproc"},
       "N",
       "ranks to start on this node (at most 4096)",
       ranks(&Options::ranks)},
      {{"--nnodes"},
       "M",
       "this is one of M nodes, each running N ranks (with --node-rank; "
       "default: from NODE_RANK/NNODES, SLURM_NODEID/SLURM_NNODES or mpirun)",
       number(&Options::nodes, 1, "a positive number of nodes")},
      {{"--node-rank"},
       "I",
       "this node's index in [0, M) (with --nnodes)",
       number(&Options::nodeRank, 0, "a node index (0, 1, ...)")},
      {{"--store"},
       "file:DIR|redis://HOST:PORT",
       "the rendezvous store, handed to the ranks (RTX_STORE)",
       text(&Options::store)},
      {{"--devices"},
       "LIST",
       "cuda:3,cuda:5: local rank r runs on the r-th device (RTX_DEVICES)",
       text(&Options::devices)},
      {{"--run-id"},
       "ID",
       "the run's id, the same on every node (default RTX_RUN_ID, the outer "
       "launcher's job id, or one per launch on one node)",
       text(&Options::runId)},
      {{"--grace"},
       "S",
       "seconds between SIGTERM and SIGKILL when stopping ranks (default 5); "
       "a pre-empted program (SIGTERM) saves its checkpoint within it",
       seconds(&Options::graceSeconds, true, 3600)},
      {{"--trace"},
       "DIR",
       "every rank writes its trace into DIR (RTX_TRACE); at the end they "
       "are merged into DIR/trace.json on one timeline (node 0 merges the "
       "traces that DIR holds)",
       [](Options &o, const std::string &, const std::string &v) {
         if (v.empty())
           usage("--trace needs a directory, got an empty one");
         o.trace = v;
       }},
      {{"--trace-steps"},
       "A:B",
       "trace only steps A to B (with --trace)",
       text(&Options::traceSteps)},
  };
}

/// Restarts, shrinking and growing back (docs/launch.md, "Failures and
/// what rtx-launch does").
std::vector<Flag> restartFlags() {
  return {
      {{"--max-restarts"},
       "R",
       "when a rank fails, start the ranks again with --resume (the "
       "program's --checkpoint DIR), at most R times in --restart-window "
       "seconds, with a backoff; each round has its own run id",
       number(&Options::maxRestarts, 0, "a number of restarts (0, 1, ...)")},
      {{"--restart-window"},
       "S",
       "the window of --max-restarts, in seconds (default 600)",
       seconds(&Options::restartWindow, false, kWeek)},
      {{"--min-ranks"},
       "M",
       "each restart has one rank fewer, down to M; '{world}' in the "
       "program's arguments becomes the number of ranks (a program per world "
       "size)",
       ranks(&Options::minRanks)},
      {{"--grow-after"},
       "S",
       "a shrunk job grows back one rank at a time: after S seconds with "
       "fewer than N ranks, the ranks are pre-empted (they commit a "
       "checkpoint at a step boundary: the program needs --checkpoint) and "
       "restarted with one more",
       seconds(&Options::growAfter, false, kWeek)},
      {{"--min-nodes"},
       "K",
       "several nodes (--nnodes M, the most) run each round, the first too, "
       "on the nodes whose agent starts it within --node-wait, if at least K "
       "('{world}' or --replan as for --min-ranks); a node started later "
       "(back, or new) is taken in at the next step boundary (the ranks are "
       "pre-empted: the program needs --checkpoint), which counts as no "
       "failure",
       number(&Options::minNodes, 1, "a positive number of nodes")},
      {{"--node-wait"},
       "S",
       "how long a round waits for the nodes (with --min-nodes; default 10)",
       [](Options &o, const std::string &flag, const std::string &v) {
         o.nodeWait = parseSeconds(flag, v, false, 3600);
         o.nodeWaitGiven = true;
       }},
  };
}

/// Growing by offered ranks, the program of another world, in-job recovery.
std::vector<Flag> growthAndRecoveryFlags() {
  return {
      {{"--max-ranks"},
       "X",
       "grow by ranks that nodes offer (--join), up to X (default N; more "
       "than N needs '{world}' or --replan, --store and --run-id)",
       ranks(&Options::maxRanks)},
      {{"--join"},
       "K",
       "with --store STORE --run-id ID and no program: offer K more ranks "
       "(a node that is back, or a new one) to the running job ID and exit; "
       "the job grows by them at its next step boundary, up to its "
       "--max-ranks",
       ranks(&Options::join)},
      {{"--replan"},
       "MODEL.mlir",
       "a restart to another number of ranks runs a program planned for it "
       "by rtx-auto-partition, built once into the --replan-cache as "
       "world-W/program; it takes the place of the first argument that names "
       "an executable file (a path with a '/')",
       replanText(&ReplanOptions::model)},
      {{"--replan-profile"},
       "P",
       "the hardware profile of --replan (default cpu-host)",
       replanText(&ReplanOptions::profile)},
      {{"--replan-options"},
       "'lr=..'",
       "rtx-distribute's options for --replan",
       replanText(&ReplanOptions::distribute)},
      {{"--replan-cache"},
       "DIR",
       "where --replan builds (default /tmp/rtx-replan-RUN)",
       replanText(&ReplanOptions::cache)},
      {{"--recover"},
       "in-job|restart",
       "in-job: a failed rank is replaced in the running job: the others "
       "keep their processes and state, report the loss in the store and "
       "meet the replacement in a new rendezvous epoch, which takes the state "
       "from a survivor (or every rank the newest checkpoint); needs --store "
       "and --max-restarts R (each replacement counts). With --min-ranks M "
       "the job shrinks instead while above M: the survivors save the newest "
       "step they hold and the job resumes from it with one rank fewer. On "
       "several nodes each agent collects its own ranks and node 0's "
       "decides; a node that does not answer within --recover-window + 10 s "
       "restarts every rank. restart (the default): every rank is restarted",
       [](Options &o, const std::string &, const std::string &v) {
         if (v != "in-job" && v != "restart")
           usage("--recover is in-job or restart, got '" + v + "'");
         o.inJob = v == "in-job";
       }},
      {{"--recover-window"},
       "S",
       "a rank that reports no loss within S seconds (default 3) of the "
       "first is replaced too",
       seconds(&Options::recoverWindow, false, 3600)},
  };
}

/// Every option of rtx-launch, in the order --help lists them.
const std::vector<Flag> &flagTable() {
  static const std::vector<Flag> table = [] {
    std::vector<Flag> flags = placementFlags();
    for (std::vector<Flag> more : {restartFlags(), growthAndRecoveryFlags()})
      for (Flag &flag : more)
        flags.push_back(std::move(flag));
    flags.push_back({{"-h", "--help"},
                     nullptr,
                     "print this help",
                     [](Options &, const std::string &, const std::string &) {
                       usage("");
                     }});
    return flags;
  }();
  return table;
}

const Flag *findFlag(const std::string &name) {
  for (const Flag &flag : flagTable())
    for (const std::string &n : flag.names)
      if (n == name)
        return &flag;
  return nullptr;
}

/// Prints `text` in the help's column `indent`, wrapped before column 80;
/// the cursor is there already.
void printWrapped(const std::string &text, size_t indent) {
  size_t at = indent;
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(' ', start), text.size());
    std::string word = text.substr(start, end - start);
    if (at > indent && at + 1 + word.size() > 79) {
      std::fprintf(stderr, "\n%*s", static_cast<int>(indent), "");
      at = indent;
    } else if (at > indent) {
      std::fputc(' ', stderr);
      ++at;
    }
    std::fputs(word.c_str(), stderr);
    at += word.size();
    start = end + 1;
  }
  std::fputc('\n', stderr);
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

/// A rule that ties options together: the refusal, or "" when it holds.
using Rule = std::function<std::string(const Options &)>;

std::string n(int value) { return std::to_string(value); }

/// --join only offers ranks: nothing is started.
const std::vector<Rule> &joinRules() {
  static const std::vector<Rule> rules = {
      [](const Options &o) -> std::string {
        if (o.store.empty() || o.runId.empty())
          return "--join offers ranks to a running job through its store: it "
                 "needs --store and the job's --run-id";
        return "";
      },
      [](const Options &o) -> std::string {
        if (o.ranks > 0 || !o.program.empty())
          return "--join offers ranks to a running job and starts none: give "
                 "no -n and no program";
        return "";
      },
  };
  return rules;
}

/// What a launch needs before its defaults are filled in.
const std::vector<Rule> &requiredRules() {
  static const std::vector<Rule> rules = {
      [](const Options &o) -> std::string {
        return o.ranks == 0 ? "-n N is required" : "";
      },
      [](const Options &o) -> std::string {
        return o.program.empty() ? "no program to launch: give it after --"
                                 : "";
      },
      [](const Options &o) -> std::string {
        return !o.traceSteps.empty() && o.trace.empty()
                   ? "--trace-steps needs --trace DIR"
                   : "";
      },
      [](const Options &o) -> std::string {
        if (o.traceSteps.empty())
          return "";
        rtxrt::TraceOptions steps;
        try {
          rtxrt::TraceOptions::parseSteps(o.traceSteps, steps);
        } catch (const rtxrt::Error &error) {
          return error.what();
        }
        return "";
      },
  };
  return rules;
}
/// The rules of elasticity: shrinking, growing, re-planning.
const std::vector<Rule> &elasticRules() {
  static const std::vector<Rule> rules = {
      [](const Options &o) -> std::string {
        if (o.minRanks > o.ranks)
          return "--min-ranks " + n(o.minRanks) + " is more than -n " +
                 n(o.ranks);
        if (o.minRanks > 0 && o.maxRestarts == 0)
          return "--min-ranks shrinks the job at a restart: it needs "
                 "--max-restarts N";
        return "";
      },
      [](const Options &o) -> std::string {
        bool replanFlags = o.replan.profile != "cpu-host" ||
                           !o.replan.distribute.empty() ||
                           !o.replan.cache.empty();
        if (o.replan.model.empty() && replanFlags)
          return "--replan-profile, --replan-options and --replan-cache go "
                 "with --replan MODEL.mlir";
        if (o.replan.model.empty())
          return "";
        if (o.minRanks == 0 && o.minNodes == 0 && o.maxRanks <= o.ranks)
          return "--replan plans the program of a shrunk or grown job: it "
                 "needs --min-ranks M, --min-nodes K or --max-ranks X";
        if (access(o.replan.model.c_str(), R_OK) != 0)
          return "--replan: cannot read the model " + o.replan.model + ": " +
                 std::strerror(errno);
        return "";
      },
      [](const Options &o) -> std::string {
        if (o.maxRanks < o.ranks)
          return "--max-ranks " + n(o.maxRanks) + " is less than -n " +
                 n(o.ranks);
        if (o.maxRanks > o.ranks && !hasProgramPerWorld(o))
          return "--max-ranks grows the job beyond -n: the program's "
                 "arguments need '{world}' (a program per world size) or "
                 "--replan MODEL";
        if (o.maxRanks > o.ranks && (o.store.empty() || o.runId.empty()))
          return "--max-ranks grows the job when a node offers ranks "
                 "(rtx-launch --join) through the store: it needs --store and "
                 "--run-id";
        if (o.maxRanks > o.ranks && o.nodes > 1)
          return "--max-ranks grows the ranks of one node; a job of several "
                 "nodes is grown by its outer launcher";
        return "";
      },
      [](const Options &o) -> std::string {
        if (o.nodeWaitGiven && o.minNodes == 0)
          return "--node-wait is how long a restart waits for the nodes of a "
                 "job that shrinks by nodes: it needs --min-nodes K";
        if (o.minNodes > 0 && o.minRanks > 0)
          return "--min-nodes shrinks a job of several nodes by whole nodes, "
                 "--min-ranks one node by ranks: give one of them";
        if (o.minNodes > 0 && o.maxRestarts == 0)
          return "--min-nodes shrinks the job at a restart: it needs "
                 "--max-restarts R";
        if (o.minNodes > 0 && !hasProgramPerWorld(o))
          return "--min-nodes runs the job on fewer nodes: the program's "
                 "arguments need '{world}' (a program per world size) or "
                 "--replan MODEL";
        return "";
      },
      [](const Options &o) -> std::string {
        if (o.growAfter >= 0 && o.minRanks == 0)
          return "--grow-after grows back a job that --min-ranks shrank: it "
                 "needs --min-ranks M";
        if (o.inJob && o.maxRestarts == 0)
          return "--recover in-job replaces failed ranks within the restart "
                 "budget: it needs --max-restarts R";
        if (o.inJob && o.store.empty())
          return "--recover in-job meets the survivors again through the "
                 "store: it needs --store file:DIR or redis://HOST:PORT";
        return "";
      },
  };
  return rules;
}

/// The rules of placement: nodes, devices, the store.
const std::vector<Rule> &placementRules() {
  static const std::vector<Rule> rules = {
      [](const Options &o) -> std::string {
        if ((o.nodes > 0) != (o.nodeRank >= 0))
          return "--nnodes and --node-rank go together";
        if (o.nodeRank >= o.nodes && o.nodes > 0)
          return "--node-rank " + n(o.nodeRank) + " is outside [0, " +
                 n(o.nodes) + ")";
        return "";
      },
      [](const Options &o) -> std::string {
        if (o.devices.empty())
          return "";
        size_t listed = 1;
        for (char c : o.devices)
          listed += c == ',';
        if (listed != static_cast<size_t>(o.ranks))
          return "--devices lists " + std::to_string(listed) +
                 " device(s) for " + n(o.ranks) + " ranks: list one per rank";
        return "";
      },
      [](const Options &o) -> std::string {
        if (!o.store.empty() && o.store.rfind("file:", 0) != 0 &&
            o.store.rfind("redis://", 0) != 0)
          return "--store must be file:DIR or redis://HOST:PORT, got '" +
                 o.store + "'";
        return "";
      },
  };
  return rules;
}

/// Refuses the options through usage() at the first rule they break.
void check(const Options &options, const std::vector<Rule> &rules) {
  for (const Rule &rule : rules)
    if (std::string refusal = rule(options); !refusal.empty())
      usage(refusal);
}

} // namespace

[[noreturn]] void rtxlaunch::usage(const std::string &error) {
  if (!error.empty())
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.c_str());
  std::fprintf(
      stderr,
      "usage: rtx-launch -n N [OPTIONS] -- PROGRAM [ARGS...]\n"
      "       rtx-launch --join K --store STORE --run-id ID\n"
      "  Starts N ranks of PROGRAM on this machine with RANK, WORLD_SIZE,\n"
      "  LOCAL_RANK, LOCAL_WORLD_SIZE and RTX_STORE set (docs/launch.md); "
      "prefixes\n  their output with their rank; stops all ranks when one "
      "fails and exits\n  with its status.\noptions:\n");
  for (const Flag &flag : flagTable()) {
    std::string names = "  ";
    for (const std::string &name : flag.names)
      names += (names.size() > 2 ? ", " : "") + name;
    if (flag.value)
      names += std::string(" ") + flag.value;
    // The help starts in column kHelpColumn, on a line of its own after
    // long names.
    if (names.size() + 1 > kHelpColumn)
      std::fprintf(stderr, "%s\n%*s", names.c_str(), int(kHelpColumn), "");
    else
      std::fprintf(stderr, "%-*s", int(kHelpColumn), names.c_str());
    printWrapped(flag.help, kHelpColumn);
  }
  std::exit(2);
}

Options rtxlaunch::parse(int argc, char **argv) {
  Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    const Flag *flag = findFlag(arg);
    if (!flag)
      usage("unknown flag '" + arg + "' (put the program after --)");
    if (flag->value && i + 1 >= argc)
      usage(arg + " needs a value");
    flag->set(options, arg, flag->value ? argv[++i] : "");
  }
  for (; i < argc; ++i)
    options.program.push_back(argv[i]);
  if (options.join > 0) {
    check(options, joinRules());
    return options;
  }
  check(options, requiredRules());
  if (options.maxRanks == 0)
    options.maxRanks = options.ranks;
  check(options, elasticRules());
  check(options, placementRules());
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
