//===- Flags.cpp - an emitted program's command line ----------------------===//

#include "Flags.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace rtxrt;
using namespace rtxrt::program;

// Seconds as the user would write them: 2, 0.5, 60.
static std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

Flags rtxrt::program::parseFlags(const std::string &program, int argc,
                                 char **argv) {
  Flags flags;
  std::string traceFlag;      // the last flag given that shapes a trace
  std::string checkpointFlag; // the last flag given that needs --checkpoint
  bool stepsGiven = false;
  bool hostGiven = false;
  bool rendezvousGiven = false;
  if (const char *store = std::getenv("RTX_STORE"))
    flags.store = store;
  // rtx-launch --trace DIR exports RTX_TRACE (and RTX_TRACE_STEPS) to every
  // rank; the flags below win over them.
  if (const char *trace = std::getenv("RTX_TRACE"); trace && *trace)
    flags.trace.dir = trace;
  if (const char *steps = std::getenv("RTX_TRACE_STEPS"); steps && *steps)
    TraceOptions::parseSteps(steps, flags.trace);
  if (const char *port = std::getenv("RTX_METRICS_PORT"); port && *port) {
    char *end = nullptr;
    long p = std::strtol(port, &end, 10);
    if (*end || p < 0 || p > 65535)
      throw Error(std::string("RTX_METRICS_PORT needs a port in [0, 65535], "
                              "got '") +
                  port + "'");
    flags.metricsPort = static_cast<int>(p);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help" && arg != "-h" && arg != "--params-partial" &&
               arg != "--resume" && arg != "--deterministic") {
      if (i + 1 >= argc)
        throw Error(arg + " needs a value (see --help)");
      value = argv[++i];
    }
    auto number = [&](const std::string &what) {
      char *end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end)
        throw Error(arg + " needs " + what + ", got '" + value + "'");
      return v;
    };
    // A count of at least 1 and at most `max` ("of steps": `what`).
    auto count = [&](const std::string &what, double max) {
      double n = number("a number" + (what.empty() ? "" : " of " + what));
      if (!(n >= 1 && n <= max) || n != static_cast<int64_t>(n))
        throw Error(arg + " needs a whole number" +
                    (what.empty() ? "" : " of " + what) + " >= 1, got '" +
                    value + "'");
      return static_cast<int64_t>(n);
    };
    // A path flag given an empty value ("--data=", an unset shell variable)
    // would silently mean "none": refuse it.
    auto path = [&]() {
      if (value.empty())
        throw Error(arg + " needs a path, got an empty one");
      return value;
    };
    if (arg == "--help" || arg == "-h")
      flags.help = true;
    else if (arg == "--params-partial") {
      if (!value.empty())
        throw Error("--params-partial takes no value");
      flags.paramsPartial = true;
    } else if (arg == "--resume") {
      if (!value.empty())
        throw Error("--resume takes no value");
      flags.checkpoint.resume = true;
    } else if (arg == "--deterministic") {
      if (!value.empty())
        throw Error("--deterministic takes no value");
      flags.checkpoint.deterministic = true;
      checkpointFlag = arg;
    } else if (arg == "--preempt") {
      if (value != "save" && value != "fail")
        throw Error("--preempt needs save or fail, got '" + value + "'");
      flags.checkpoint.saveOnPreemption = value == "save";
      checkpointFlag = arg;
    } else if (arg == "--wal-sync-every") {
      flags.checkpoint.walSyncEvery = count("records", 1e12);
      checkpointFlag = arg;
    } else if (arg == "--checkpoint") {
      flags.checkpoint.dir = path();
    } else if (arg == "--checkpoint-every") {
      flags.checkpoint.every = count("steps", 1e12);
      checkpointFlag = arg;
    } else if (arg == "--keep-checkpoints") {
      flags.checkpoint.keep = count("", 1e6);
      checkpointFlag = arg;
    } else if (arg == "--steps") {
      flags.steps = static_cast<int64_t>(number("a number of steps"));
      if (flags.steps < 1)
        throw Error("--steps must be at least 1");
      stepsGiven = true;
    } else if (arg == "--until-step") {
      flags.untilStep = count("steps", 1e15);
    } else if (arg == "--seed")
      flags.seed = static_cast<int64_t>(number("a number"));
    else if (arg == "--inputs")
      flags.inputs = path();
    else if (arg == "--params")
      flags.params = path();
    else if (arg == "--out")
      flags.out = path();
    else if (arg == "--store")
      flags.store = path();
    else if (arg == "--data")
      flags.data = path();
    else if (arg == "--metrics")
      flags.metrics = path();
    else if (arg == "--trace")
      flags.trace.dir = path();
    else if (arg == "--trace-steps") {
      TraceOptions::parseSteps(value, flags.trace);
      traceFlag = arg;
    } else if (arg == "--trace-max-events") {
      double n = number("a number of events");
      if (!(n >= 1 && n <= 1e9))
        throw Error("--trace-max-events needs a number in [1, 1e9], got '" +
                    value + "'");
      flags.trace.maxEvents = static_cast<int64_t>(n);
      traceFlag = arg;
    } else if (arg == "--metrics-port") {
      double p = number("a port");
      if (!(p >= 0 && p <= 65535) || p != static_cast<int>(p))
        throw Error("--metrics-port needs a port in [0, 65535], got '" + value +
                    "'");
      flags.metricsPort = static_cast<int>(p);
    } else if (arg == "--metrics-host") {
      if (value.empty())
        throw Error("--metrics-host needs an address, got an empty one");
      flags.metricsHost = value;
      hostGiven = true;
    } else if (arg == "--metrics-textfile")
      flags.metricsTextfile = path();
    else if (arg == "--metrics-linger") {
      flags.metricsLinger = number("seconds");
      if (!(flags.metricsLinger >= 0 && flags.metricsLinger <= 3600))
        throw Error("--metrics-linger needs seconds in [0, 3600], got '" +
                    value + "'");
    } else if (arg == "--state")
      flags.state = path();
    else if (arg == "--save-state")
      flags.saveState = path();
    else if (arg == "--offload-dir")
      flags.offloadDir = path();
    else if (arg == "--timeout" || arg == "--rendezvous-timeout") {
      bool rendezvous = arg == "--rendezvous-timeout";
      if (!rendezvous && value == "auto") {
        flags.timeoutAuto = true;
        continue;
      }
      double seconds = number("seconds");
      // NaN compares false, so test for the accepted range, not against it.
      if (!(seconds > 0 && seconds <= kMaxTimeoutSeconds))
        throw Error(arg + " needs a number of seconds in (0, " +
                    std::to_string(static_cast<int64_t>(kMaxTimeoutSeconds)) +
                    "]" + (rendezvous ? "" : " or 'auto'") + ", got '" + value +
                    "'");
      (rendezvous ? flags.rendezvousTimeout : flags.timeout) = seconds;
      flags.timeoutAuto = flags.timeoutAuto && rendezvous;
      rendezvousGiven = rendezvousGiven || rendezvous;
    } else
      throw Error("unknown flag '" + arg + "' (see " + program + " --help)");
  }
  // The rendezvous waits at least as long as a step's collective
  // (StepTimeout.h): a shorter one given on its own would not be honoured.
  if (rendezvousGiven && !flags.timeoutAuto &&
      flags.rendezvousTimeout < flags.timeout)
    throw Error("--rendezvous-timeout " + formatSeconds(flags.rendezvousTimeout) +
                " is shorter than --timeout " + formatSeconds(flags.timeout) +
                ", and the ranks meet under the longer of the two: pass "
                "--timeout too (or --timeout auto)");
  if (!flags.params.empty() && !flags.state.empty())
    throw Error("--params and --state both give the parameters; use one");
  if (flags.paramsPartial && flags.params.empty())
    throw Error("--params-partial needs --params DIR");
  if (stepsGiven && flags.untilStep > 0)
    throw Error("--steps N runs N more steps and --until-step N until N are "
                "done; give one");
  // --resume with --params or --state: the newest checkpoint when there is
  // one, else those (a job restarted before its first checkpoint).
  if (flags.checkpoint.resume && flags.checkpoint.dir.empty())
    checkpointFlag = "--resume";
  if (!checkpointFlag.empty() && flags.checkpoint.dir.empty())
    throw Error(checkpointFlag + " needs --checkpoint DIR");
  // Options that shape a trace or an endpoint that is not there would be
  // ignored: refuse them.
  if (!traceFlag.empty() && flags.trace.dir.empty())
    throw Error(traceFlag + " needs --trace DIR (or RTX_TRACE)");
  if (hostGiven && flags.metricsPort < 0)
    throw Error("--metrics-host needs --metrics-port (or RTX_METRICS_PORT)");
  if (flags.metricsLinger > 0 && flags.metricsPort < 0)
    throw Error("--metrics-linger keeps the /metrics endpoint up: it needs "
                "--metrics-port");
  return flags;
}

void rtxrt::program::printHelp(const std::string &program,
                               const ProgramSpec &spec) {
  std::printf(
      "%s: a training program compiled by rtx for %lld rank(s)\n"
      "  --steps N          training steps (default 1)\n"
      "  --until-step N     train until N steps are done in all, those "
      "before --resume\n"
      "                     or --state included (a restarted job's "
      "command line)\n"
      "  --inputs DIR       data: DIR/NAME.npy (global shapes); missing "
      "inputs are drawn with --seed\n"
      "  --params DIR       initial parameters: DIR/NAME.npy, every one "
      "(else their\n"
      "                     initializers, without --params)\n"
      "  --params-partial   draw the parameters that --params DIR lacks "
      "from their\n"
      "                     initializers (each is named on stderr)\n"
      "  --out DIR          write the final results as DIR/resultN.npy "
      "(rank 0)\n"
      "  --data FILE.bin    token file (nanoGPT uint16, or llm.c with its "
      "header):\n"
      "                     each step reads the next batch of windows into "
      "'tokens' and\n"
      "                     'labels' (the same windows shifted by one)\n"
      "  --seed S           seed of drawn inputs (default 0)\n"
      "  --store file:DIR   rendezvous (default $RTX_STORE); rank and "
      "size from RANK/WORLD_SIZE\n"
      "  --timeout S|auto   seconds a collective of a step may wait "
      "(default 60); auto:\n"
      "                     10x the p99 step time, at least 2 s and at "
      "most 60 s,\n"
      "                     after 3 steps under --rendezvous-timeout\n"
      "  --rendezvous-timeout S  seconds the ranks may take to meet at the "
      "start\n"
      "                     (default 60, or --timeout when larger; not "
      "less than\n                     a fixed --timeout)\n"
      "  --metrics FILE     rank 0 writes one JSON line per step: step, "
      "loss,\n"
      "                     step_time_ms, tokens_per_s, collective_ms, "
      "collective_pct,\n"
      "                     allreduce_pct, overlap_pct, net_bw_gbps, "
      "peak_bytes\n"
      "  --trace DIR        every rank writes DIR/rank-R.trace.json (Chrome "
      "trace\n"
      "                     events; default $RTX_TRACE) and "
      "DIR/rank-R.metrics.jsonl\n"
      "  --trace-steps A:B  trace steps A to B of this run (also A:, :B, "
      "A; default all)\n"
      "  --trace-max-events N  keep at most N events per rank (default "
      "1048576)\n"
      "  --metrics-port P   serve Prometheus metrics on "
      "http://HOST:P+LOCAL_RANK/metrics\n"
      "                     (default $RTX_METRICS_PORT, else off; 0: any "
      "free port)\n"
      "  --metrics-host H   the address it listens on (default 127.0.0.1; "
      "0.0.0.0: all)\n"
      "  --metrics-linger S keep serving S seconds after the last step\n"
      "  --metrics-textfile DIR  write DIR/rtx_rank_R.prom after every step "
      "(node-exporter)\n"
      "  --save-state DIR   at the end, write the parameters and optimizer "
      "state as\n"
      "                     DIR/KEY.npy (KEY: param:NAME, exp_avg:NAME, "
      "..., step)\n"
      "  --state DIR        start from a --save-state directory (training "
      "continues\n"
      "                     where that run stopped)\n"
      "  --checkpoint DIR   checkpoints in DIR/step-N: each rank writes its "
      "own blocks of\n"
      "                     the state, CRC32C-checked, committed by a "
      "manifest\n"
      "                     (docs/checkpoint.md); after the last step, and "
      "with\n"
      "  --checkpoint-every N  after every N-th step too\n"
      "  --keep-checkpoints K  keep the newest K committed checkpoints "
      "(default 3)\n"
      "  --deterministic    log a hash of the state after every step "
      "(DIR/wal.log);\n"
      "                     --resume replays the logged steps after the "
      "checkpoint and\n"
      "                     stops with an error at a step whose hash differs\n"
      "  --wal-sync-every N fsync the log every N steps (default 1)\n"
      "  --resume           start from the newest committed checkpoint in "
      "--checkpoint\n"
      "                     DIR, on any mesh (none yet: from --params, "
      "--state or the\n"
      "                     initializers)\n"
      "  --preempt save|fail  with --checkpoint, what SIGTERM and SIGINT do "
      "(default save,\n"
      "                     below; fail: end the process as without "
      "--checkpoint)\n"
      "                     With --checkpoint, SIGTERM or SIGINT is a "
      "pre-emption: every\n"
      "                     rank stops after the same step, the checkpoint "
      "of that step\n"
      "                     is committed, and the program exits 0\n"
      "  --offload-dir DIR  where a program compiled with offload=nvme keeps "
      "its\n"
      "                     offloaded state (DIR/rank-R; an SSD or NVMe "
      "path)\n",
      program.c_str(), static_cast<long long>(spec.mesh.numRanks()));
}

ArgumentSources rtxrt::program::argumentSources(const Flags &flags) {
  ArgumentSources sources;
  sources.inputsDir = flags.inputs;
  // Without --inputs every input is drawn; with it, every input is read.
  sources.drawInputs = flags.inputs.empty();
  sources.seed = flags.seed;
  sources.paramsDir = flags.params;
  sources.paramsPartial = flags.paramsPartial;
  sources.stateDir = flags.state;
  return sources;
}
