//===- Flags.cpp - an emitted program's command line ----------------------===//
//
// The program's flags as one table (FlagTable.h): the rows below parse,
// validate and print --help. What a flag needs of another, and the flags
// that exclude each other, are checked once all are read.
//
//===----------------------------------------------------------------------===//

#include "Flags.h"

#include "FlagTable.h"

#include "rtxrt/elastic/LaunchEnvironment.h"

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

// A whole number of `what` ("steps"; empty: none said) in [1, max].
static FlagBounds countOf(const std::string &what, double max) {
  std::string of = what.empty() ? "" : " of " + what;
  return {
      1, max, false, true, "a number" + of, "a whole number" + of + " >= 1"};
}

// Seconds in (0, kMaxTimeoutSeconds]; `orWord`: the word accepted instead.
static FlagBounds timeoutSeconds(const std::string &orWord) {
  return {0,
          kMaxTimeoutSeconds,
          true,
          false,
          "seconds",
          "a number of seconds in (0, " +
              std::to_string(static_cast<int64_t>(kMaxTimeoutSeconds)) + "]" +
              orWord};
}

static void parsePreempt(const std::string &flag, const std::string &value,
                         Flags &flags) {
  if (value != "save" && value != "fail")
    throw Error(flag + " needs save or fail, got '" + value + "'");
  flags.checkpoint.saveOnPreemption = value == "save";
}

// --data-inputs TOKENS,LABELS: two different input names.
static void parseDataInputs(const std::string &flag, const std::string &value,
                            Flags &flags) {
  size_t comma = value.find(',');
  std::string tokens = value.substr(0, comma);
  std::string labels =
      comma == std::string::npos ? "" : value.substr(comma + 1);
  if (tokens.empty() || labels.empty() || labels.find(',') != std::string::npos)
    throw Error(flag +
                " needs two input names, TOKENS,LABELS (the inputs "
                "that get the windows and the windows shifted by "
                "one), got '" +
                value + "'");
  if (tokens == labels)
    throw Error(flag + " names '" + tokens +
                "' twice: the tokens and the labels are two inputs");
  flags.dataTokens = tokens;
  flags.dataLabels = labels;
}

static void parseTraceSteps(const std::string &, const std::string &value,
                            Flags &flags) {
  TraceOptions::parseSteps(value, flags.trace);
}

// The rows that run the step: how long, from what, into what.
static void addRunFlags(std::vector<FlagSpec> &t) {
  t.push_back(numberFlag(
      "--steps", "N", +[](Flags &f) -> int64_t & { return f.steps; },
      countOf("steps", 1e15), "training steps (default 1)"));
  t.push_back(numberFlag(
      "--until-step", "N", +[](Flags &f) -> int64_t & { return f.untilStep; },
      countOf("steps", 1e15),
      "train until N steps are done in all, those before --resume\n"
      "or --state included (a restarted job's command line)"));
  t.push_back(textFlag(
      "--inputs", "DIR", [](Flags &f) -> std::string & { return f.inputs; },
      "data: DIR/NAME.npy (global shapes); missing inputs are drawn with "
      "--seed"));
  t.push_back(textFlag(
      "--params", "PATH", [](Flags &f) -> std::string & { return f.params; },
      "initial parameters, every one (else their initializers,\n"
      "without --params): a directory of NAME.npy, a safetensors\n"
      "file, or a directory of safetensors shards"));
  t.push_back(switchFlag(
                  "--params-partial",
                  [](Flags &f) -> bool & { return f.paramsPartial; },
                  "draw the parameters that --params PATH lacks from their\n"
                  "initializers (each is named on stderr)")
                  .needing(FlagNeeds::Params));
  t.push_back(switchFlag(
      "--tf32", [](Flags &f) -> bool & { return f.tf32; },
      "GPU programs in f32: matmuls on TF32 tensor cores (about\n"
      "1e-3 relative error; bf16 GEMMs use the tensor cores anyway)"));
  t.push_back(switchFlag(
      "--portable-kernels",
      [](Flags &f) -> bool & { return f.portableKernels; },
      "GPU programs: run the portable reference kernels instead of the\n"
      "fast ones (cuBLASLt, flash attention, fused rows), to tell a\n"
      "fast kernel's fault from the program's"));
  t.push_back(textFlag(
      "--out", "DIR", [](Flags &f) -> std::string & { return f.out; },
      "write the final results as DIR/resultN.npy (rank 0)"));
  t.push_back(textFlag(
      "--data", "FILE.bin", [](Flags &f) -> std::string & { return f.data; },
      "token file (nanoGPT uint16, or llm.c with its header):\n"
      "each step reads the next batch of windows into 'tokens' and\n"
      "'labels' (the same windows shifted by one; also 'idx' and\n"
      "'targets', or 'input_ids' and 'labels')"));
  t.push_back(customFlag("--data-inputs", "TOKENS,LABELS", parseDataInputs,
                         "the inputs --data feeds, when their names are "
                         "other")
                  .needing(FlagNeeds::Data));
  t.push_back(numberFlag(
      "--seed", "S", +[](Flags &f) -> int64_t & { return f.seed; },
      {-9.2e18, 9.2e18, false, true, "a number", "a whole number"},
      "seed of drawn inputs (default 0)"));
}

// The rows of the held-out evaluation (StepLoop.h).
static void addEvalFlags(std::vector<FlagSpec> &t) {
  t.push_back(textFlag(
                  "--eval-data", "FILE.bin",
                  [](Flags &f) -> std::string & { return f.eval.data; },
                  "held-out token file (as --data's): after the last step,\n"
                  "and with --eval-every, rank 0 reports the loss of the\n"
                  "same --eval-batches batches of it (each costs a step;\n"
                  "the state is untouched)")
                  .needing(FlagNeeds::Data));
  t.push_back(numberFlag(
                  "--eval-every", "N",
                  +[](Flags &f) -> int64_t & { return f.eval.every; },
                  countOf("steps", 1e15),
                  "evaluate after every N-th step too (N counts the steps\n"
                  "of the runs behind --state or --resume)")
                  .needing(FlagNeeds::EvalData));
  t.push_back(numberFlag(
                  "--eval-batches", "K",
                  +[](Flags &f) -> int64_t & { return f.eval.batches; },
                  countOf("batches", 1e9),
                  "global batches per evaluation (default 4): the first K\n"
                  "of the held-out file")
                  .needing(FlagNeeds::EvalData));
}

// The rows of the rendezvous and its timeouts.
static void addRendezvousFlags(std::vector<FlagSpec> &t) {
  t.push_back(textFlag(
      "--store", "file:DIR", [](Flags &f) -> std::string & { return f.store; },
      "rendezvous (default $RTX_STORE); rank and size from "
      "RANK/WORLD_SIZE"));
  FlagSpec timeout = numberFlag(
      "--timeout", "S|auto", +[](Flags &f) -> double & { return f.timeout; },
      timeoutSeconds(" or 'auto'"),
      "seconds a collective of a step may wait (default 60); auto:\n"
      "10x the p99 step time, at least 2 s and at most 60 s,\n"
      "after 3 steps under --rendezvous-timeout");
  timeout.word = "auto";
  timeout.wordField = [](Flags &f) -> bool & { return f.timeoutAuto; };
  t.push_back(timeout);
  t.push_back(numberFlag(
      "--rendezvous-timeout", "S",
      +[](Flags &f) -> double & { return f.rendezvousTimeout; },
      timeoutSeconds(""),
      "seconds the ranks may take to meet at the start\n"
      "(default 60, or --timeout when larger; not less than\n"
      "a fixed --timeout)"));
}

// The rows of metrics, traces and the Prometheus endpoint.
static void addObserveFlags(std::vector<FlagSpec> &t) {
  t.push_back(textFlag(
      "--metrics", "FILE", [](Flags &f) -> std::string & { return f.metrics; },
      "rank 0 writes one JSON line per step: step, loss, lr,\n"
      "step_time_ms, tokens_per_s, collective_ms, collective_pct,\n"
      "allreduce_pct, overlap_pct, net_bw_gbps, peak_bytes;\n"
      "and one per held-out evaluation: eval_step, eval_loss"));
  t.push_back(textFlag(
      "--trace", "DIR", [](Flags &f) -> std::string & { return f.trace.dir; },
      "every rank writes DIR/rank-R.trace.json (Chrome trace\n"
      "events; default $RTX_TRACE) and DIR/rank-R.metrics.jsonl"));
  t.push_back(customFlag("--trace-steps", "A:B", parseTraceSteps,
                         "trace steps A to B of this run (also A:, :B, A; "
                         "default all)")
                  .needing(FlagNeeds::Trace));
  t.push_back(
      numberFlag(
          "--trace-max-events", "N",
          +[](Flags &f) -> int64_t & { return f.trace.maxEvents; },
          {1, 1e9, false, false, "a number of events", "a number in [1, 1e9]"},
          "keep at most N events per rank (default 1048576)")
          .needing(FlagNeeds::Trace));
  // The device's peaks, written into the trace for rtx report's roofline
  // and MFU (bench/gpu measures them; a datasheet gives them).
  FlagBounds positive{0, 1e9, true, false, "a number", "a number > 0"};
  t.push_back(numberFlag(
                  "--peak-tflops", "X",
                  +[](Flags &f) -> double & { return f.trace.peakTflops; },
                  positive,
                  "the device's peak TFLOP/s, written into the trace\n"
                  "(rtx report: roofline and MFU)")
                  .needing(FlagNeeds::Trace));
  t.push_back(numberFlag(
                  "--peak-gbps", "Y",
                  +[](Flags &f) -> double & { return f.trace.peakGbps; },
                  positive,
                  "the device's peak memory GB/s, written into the trace")
                  .needing(FlagNeeds::Trace));
  t.push_back(numberFlag(
      "--metrics-port", "P", +[](Flags &f) -> int & { return f.metricsPort; },
      {0, 65535, false, true, "a port", "a port in [0, 65535]"},
      "serve Prometheus metrics on http://HOST:P+LOCAL_RANK/metrics\n"
      "(default $RTX_METRICS_PORT, else off; 0: any free port)"));
  t.push_back(textFlag(
                  "--metrics-host", "H",
                  [](Flags &f) -> std::string & { return f.metricsHost; },
                  "the address it listens on (default 127.0.0.1; 0.0.0.0: all)",
                  "an address")
                  .needing(FlagNeeds::MetricsPort));
  t.push_back(numberFlag(
      "--metrics-linger", "S",
      +[](Flags &f) -> double & { return f.metricsLinger; },
      {0, 3600, false, false, "seconds", "seconds in [0, 3600]"},
      "keep serving S seconds after the last step"));
  t.push_back(textFlag(
      "--metrics-textfile", "DIR",
      [](Flags &f) -> std::string & { return f.metricsTextfile; },
      "write DIR/rtx_rank_R.prom after every step (node-exporter)"));
}

// The rows of saved state and checkpoints.
static void addStateFlags(std::vector<FlagSpec> &t) {
  t.push_back(textFlag(
      "--save-state", "DIR",
      [](Flags &f) -> std::string & { return f.saveState; },
      "at the end, write the parameters and optimizer state as\n"
      "DIR/KEY.npy (KEY: param:NAME, exp_avg:NAME, ..., step)"));
  t.push_back(textFlag(
      "--state", "DIR", [](Flags &f) -> std::string & { return f.state; },
      "start from a --save-state directory (training continues\n"
      "where that run stopped)"));
  t.push_back(textFlag(
      "--checkpoint", "DIR",
      [](Flags &f) -> std::string & { return f.checkpoint.dir; },
      "checkpoints in DIR/step-N: each rank writes its own blocks of\n"
      "the state, CRC32C-checked, committed by a manifest\n"
      "(docs/checkpoint.md); after the last step, and with"));
  t.push_back(numberFlag(
                  "--checkpoint-every", "N",
                  +[](Flags &f) -> int64_t & { return f.checkpoint.every; },
                  countOf("steps", 1e12), "after every N-th step too")
                  .needing(FlagNeeds::Checkpoint));
  t.push_back(numberFlag(
                  "--keep-checkpoints", "K",
                  +[](Flags &f) -> int64_t & { return f.checkpoint.keep; },
                  countOf("", 1e6),
                  "keep the newest K committed checkpoints (default 3)")
                  .needing(FlagNeeds::Checkpoint));
  t.push_back(switchFlag(
                  "--deterministic",
                  [](Flags &f) -> bool & { return f.checkpoint.deterministic; },
                  "log a hash of the state after every step (DIR/wal.log);\n"
                  "--resume replays the logged steps after the checkpoint and\n"
                  "stops with an error at a step whose hash differs")
                  .needing(FlagNeeds::Checkpoint));
  t.push_back(
      numberFlag(
          "--wal-sync-every", "N",
          +[](Flags &f) -> int64_t & { return f.checkpoint.walSyncEvery; },
          countOf("records", 1e12), "fsync the log every N steps (default 1)")
          .needing(FlagNeeds::Checkpoint));
  t.push_back(switchFlag(
                  "--resume",
                  [](Flags &f) -> bool & { return f.checkpoint.resume; },
                  "start from the newest committed checkpoint in --checkpoint\n"
                  "DIR, on any mesh (none yet: from --params, --state or the\n"
                  "initializers)")
                  .needing(FlagNeeds::Checkpoint));
  t.push_back(
      customFlag("--preempt", "save|fail", parsePreempt,
                 "with --checkpoint, what SIGTERM and SIGINT do (default\n"
                 "save, below; fail: end the process as without --checkpoint)\n"
                 "With --checkpoint, SIGTERM or SIGINT is a pre-emption:\n"
                 "every rank stops after the same step, the checkpoint of\n"
                 "that step is committed, and the program exits 0")
          .needing(FlagNeeds::Checkpoint));
  t.push_back(textFlag(
      "--offload-dir", "DIR",
      [](Flags &f) -> std::string & { return f.offloadDir; },
      "where a program compiled with offload=nvme keeps its\n"
      "offloaded state (DIR/rank-R; an SSD or NVMe path)"));
}

// How a GPU program runs its steps (docs/gpu.md "One arena, one graph per
// step").
static void addDeviceFlags(std::vector<FlagSpec> &t) {
  t.push_back(switchFlag(
      "--no-step-arena", [](Flags &f) -> bool & { return f.noStepArena; },
      "GPU programs: take each buffer of a step from the device pool\n"
      "instead of one arena planned from the first step (no CUDA graphs\n"
      "then either)"));
  t.push_back(switchFlag(
      "--no-cuda-graph", [](Flags &f) -> bool & { return f.noCudaGraph; },
      "GPU programs: run every step from the host instead of capturing\n"
      "it once as a CUDA graph and replaying it (the emulation has no\n"
      "graphs)"));
}

// Every flag of an emitted program, in the order of --help.
static const std::vector<FlagSpec> &flagTable() {
  static const std::vector<FlagSpec> table = [] {
    std::vector<FlagSpec> t;
    addRunFlags(t);
    addEvalFlags(t);
    addRendezvousFlags(t);
    addObserveFlags(t);
    addStateFlags(t);
    addDeviceFlags(t);
    FlagSpec help = switchFlag(
        "--help", [](Flags &f) -> bool & { return f.help; }, "this help");
    help.alias = "-h";
    t.push_back(help);
    return t;
  }();
  return table;
}

// What rtx-launch hands every rank through the environment: the store, the
// trace and the metrics port. The flags win over them.
static void readLauncherVariables(Flags &flags, const LaunchHandoff &handoff) {
  flags.store = handoff.store;
  if (!handoff.trace.empty())
    flags.trace.dir = handoff.trace;
  if (!handoff.traceSteps.empty())
    TraceOptions::parseSteps(handoff.traceSteps, flags.trace);
  if (const char *port = std::getenv("RTX_METRICS_PORT"); port && *port) {
    char *end = nullptr;
    long p = std::strtol(port, &end, 10);
    if (*end || p < 0 || p > 65535)
      throw Error(std::string("RTX_METRICS_PORT needs a port in [0, 65535], "
                              "got '") +
                  port + "'");
    flags.metricsPort = static_cast<int>(p);
  }
}

// Whether the flag `needs` names is there, and how a refusal names it.
static bool hasNeeded(FlagNeeds needs, const Flags &flags) {
  switch (needs) {
  case FlagNeeds::Nothing:
    return true;
  case FlagNeeds::Checkpoint:
    return !flags.checkpoint.dir.empty();
  case FlagNeeds::Params:
    return !flags.params.empty();
  case FlagNeeds::Trace:
    return !flags.trace.dir.empty();
  case FlagNeeds::MetricsPort:
    return flags.metricsPort >= 0;
  case FlagNeeds::Data:
    return !flags.data.empty();
  case FlagNeeds::EvalData:
    return !flags.eval.data.empty();
  }
  return true;
}

static const char *neededFlag(FlagNeeds needs) {
  switch (needs) {
  case FlagNeeds::Nothing:
    return "";
  case FlagNeeds::Checkpoint:
    return "--checkpoint DIR";
  case FlagNeeds::Params:
    return "--params PATH";
  case FlagNeeds::Trace:
    return "--trace DIR (or RTX_TRACE)";
  case FlagNeeds::MetricsPort:
    return "--metrics-port (or RTX_METRICS_PORT)";
  case FlagNeeds::Data:
    return "--data FILE.bin";
  case FlagNeeds::EvalData:
    return "--eval-data FILE.bin";
  }
  return "";
}

// Flags that would be ignored, or that contradict each other, are refused
// rather than silently resolved. `given`: the rows, in command-line order.
static void checkCombinations(const Flags &flags,
                              const std::vector<const FlagSpec *> &given) {
  auto gave = [&](const char *name) {
    for (const FlagSpec *spec : given)
      if (spec->name == name)
        return true;
    return false;
  };
  // The rendezvous waits at least as long as a step's collective
  // (StepTimeout.h): a shorter one given on its own would not be honoured.
  if (gave("--rendezvous-timeout") && !flags.timeoutAuto &&
      flags.rendezvousTimeout < flags.timeout)
    throw Error("--rendezvous-timeout " +
                formatSeconds(flags.rendezvousTimeout) +
                " is shorter than --timeout " + formatSeconds(flags.timeout) +
                ", and the ranks meet under the longer of the two: pass "
                "--timeout too (or --timeout auto)");
  if (!flags.params.empty() && !flags.state.empty())
    throw Error("--params and --state both give the parameters; use one");
  // With --data the token windows replace 'tokens' and 'labels' of every
  // step, so --inputs would be read and then ignored.
  if (!flags.data.empty() && !flags.inputs.empty())
    throw Error("--data and --inputs both give the step's inputs; use one");
  if (gave("--steps") && flags.untilStep > 0)
    throw Error("--steps N runs N more steps and --until-step N until N are "
                "done; give one");
  // A flag whose partner is missing would be ignored: name the last one
  // given of each kind.
  for (FlagNeeds needs :
       {FlagNeeds::Params, FlagNeeds::Checkpoint, FlagNeeds::Trace,
        FlagNeeds::MetricsPort, FlagNeeds::Data, FlagNeeds::EvalData}) {
    const FlagSpec *last = nullptr;
    for (const FlagSpec *spec : given)
      last = spec->needs == needs ? spec : last;
    if (last && !hasNeeded(needs, flags))
      throw Error(last->name + " needs " + neededFlag(needs));
  }
  if (flags.metricsLinger > 0 && flags.metricsPort < 0)
    throw Error("--metrics-linger keeps the /metrics endpoint up: it needs "
                "--metrics-port");
}

Flags rtxrt::program::parseFlags(const std::string &program, int argc,
                                 char **argv, const LaunchHandoff &handoff) {
  Flags flags;
  readLauncherVariables(flags, handoff);
  std::vector<const FlagSpec *> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    size_t eq = arg.find('=');
    bool inlineValue = arg.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inlineValue) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    const FlagSpec *spec = findFlag(flagTable(), arg);
    if (!spec)
      throw Error("unknown flag '" + arg + "' (see " + program + " --help)");
    if (spec->kind != FlagKind::Switch && !inlineValue) {
      if (i + 1 >= argc)
        throw Error(arg + " needs a value (see --help)");
      value = argv[++i];
    }
    applyFlag(*spec, value, inlineValue, flags);
    given.push_back(spec);
  }
  checkCombinations(flags, given);
  return flags;
}

void rtxrt::program::printHelp(const std::string &program,
                               const ProgramSpec &spec) {
  std::printf("%s: a training program compiled by rtx for %lld rank(s)\n",
              program.c_str(), static_cast<long long>(spec.mesh.numRanks()));
  printFlagHelp(flagTable());
}

ArgumentSources rtxrt::program::argumentSources(const Flags &flags) {
  ArgumentSources sources;
  sources.inputsDir = flags.inputs;
  // Without --inputs every input is drawn; with it, every input is read.
  sources.drawInputs = flags.inputs.empty();
  sources.seed = flags.seed;
  sources.params = flags.params;
  sources.paramsPartial = flags.paramsPartial;
  sources.stateDir = flags.state;
  return sources;
}
