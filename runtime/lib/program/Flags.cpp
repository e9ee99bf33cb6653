//===- Flags.cpp - an emitted program's command line ----------------------===//

#include "Flags.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace rtxrt;
using namespace rtxrt::program;

Flags rtxrt::program::parseFlags(const std::string &program, int argc,
                                 char **argv) {
  Flags flags;
  if (const char *store = std::getenv("RTX_STORE"))
    flags.store = store;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help" && arg != "-h" && arg != "--params-partial") {
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
    } else if (arg == "--steps") {
      flags.steps = static_cast<int64_t>(number("a number of steps"));
      if (flags.steps < 1)
        throw Error("--steps must be at least 1");
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
    else if (arg == "--state")
      flags.state = path();
    else if (arg == "--save-state")
      flags.saveState = path();
    else if (arg == "--timeout") {
      flags.timeout = number("seconds");
      // NaN compares false, so test for the accepted range, not against it.
      if (!(flags.timeout > 0 && flags.timeout <= kMaxTimeoutSeconds))
        throw Error("--timeout needs a number of seconds in (0, " +
                    std::to_string(static_cast<int64_t>(kMaxTimeoutSeconds)) +
                    "], got '" + value + "'");
    } else
      throw Error("unknown flag '" + arg + "' (see " + program + " --help)");
  }
  if (!flags.params.empty() && !flags.state.empty())
    throw Error("--params and --state both give the parameters; use one");
  if (flags.paramsPartial && flags.params.empty())
    throw Error("--params-partial needs --params DIR");
  return flags;
}

void rtxrt::program::printHelp(const std::string &program,
                               const ProgramSpec &spec) {
  std::printf(
      "%s: a training program compiled by rtx for %lld rank(s)\n"
      "  --steps N          training steps (default 1)\n"
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
      "  --timeout S        seconds a collective may wait (default 60)\n"
      "  --metrics FILE     rank 0 writes one JSON line per step: step, "
      "loss,\n"
      "                     step_time_ms, tokens_per_s, collective_ms, "
      "collective_pct\n"
      "  --save-state DIR   at the end, write the parameters and optimizer "
      "state as\n"
      "                     DIR/KEY.npy (KEY: param:NAME, exp_avg:NAME, "
      "..., step)\n"
      "  --state DIR        start from a --save-state directory (training "
      "continues\n"
      "                     where that run stopped)\n",
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
