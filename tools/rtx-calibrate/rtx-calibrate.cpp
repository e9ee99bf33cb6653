//===- rtx-calibrate.cpp - measure what a hardware profile cannot know ----===//
//
//   rtx-calibrate [--profile IN.json] -o OUT.json [--quick]
//                 [--gemm-shapes M,N,K;...] [--max-seconds S]
//                 [--store SPEC] [--timeout S]
//   rtx-launch -n N -- rtx-calibrate ...
//
// The planner prices plans with a hardware profile written from datasheets;
// what the runtime actually reaches differs by shape, library and link. This
// tool times the runtime's own kernels (GEMM throughput per shape,
// elementwise bandwidth, per-op overhead) and, under a launcher, the
// collectives of its own communicator per group size (alpha-beta fits), and
// writes them into the profile (docs/calibration.md). It links librtxrt
// only: it runs where the programs run, without MLIR.
//
//===----------------------------------------------------------------------===//

#include "CollectiveTiming.h"
#include "Compute.h"
#include "Profile.h"
#include "Session.h"

#include "rtxrt/kernels/Kernels.h"
#include "rtxrt/elastic/LaunchEnvironment.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace rtx::calibrate;

namespace {

struct Options {
  std::string profile, output, store, gemmShapes;
  bool quick = false;
  std::optional<double> maxSeconds;
  double timeoutSeconds = 60;
  /// Work before each timed collective (docs/calibration.md, Timing).
  double computeGapSeconds = 3e-3;
};

/// Bad usage: exit 1, like every other error of this tool.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

void printHelp() {
  std::printf(
      "usage: rtx-calibrate [--profile IN.json] -o OUT.json [--quick]\n"
      "                     [--gemm-shapes M,N,K;...] [--max-seconds S]\n"
      "                     [--store file:DIR|redis://HOST:PORT] "
      "[--timeout S]\n"
      "                     [--compute-gap-ms MS]\n"
      "       rtx-launch -n N [--store file:DIR] -- rtx-calibrate ...\n"
      "\n"
      "Measures GEMM throughput by shape, elementwise bandwidth, the FLOP\n"
      "rate of non-GEMM arithmetic (GELU) and per-op overhead through the\n"
      "runtime's kernels; under a launcher (N ranks)\n"
      "also the alpha-beta of all_reduce, all_gather, reduce_scatter and\n"
      "send/recv for each group size dividing N, over the runtime's Gloo\n"
      "communicator. Writes IN.json with a \"calibration\" object and\n"
      "device.memory_bandwidth, device.op_overhead_s and\n"
      "device.vector_flops_per_s replaced (rank 0 writes). Without --profile, starts from a minimal CPU profile.\n"
      "\n"
      "  --profile IN.json   an rtx-hardware-profile/1 to complete\n"
      "  -o, --output FILE   where to write the calibrated profile\n"
      "  --quick             a small grid and few sizes (seconds)\n"
      "  --gemm-shapes LIST  the GEMMs to time, M,N,K;... ([M,K] x [K,N])\n"
      "  --max-seconds S     time budget; larger GEMMs and messages that\n"
      "                      would overrun it are skipped (default 90,\n"
      "                      --quick 12)\n"
      "  --store SPEC        rendezvous of several ranks (default RTX_STORE;\n"
      "                      under rtx-launch without one, a directory of\n"
      "                      /tmp named by the run)\n"
      "  --timeout S         seconds a collective may wait (default 60)\n"
      "  --compute-gap-ms MS every rank computes MS ms before each timed\n"
      "                      collective, as a program's step does between\n"
      "                      them (default 3; 0: back to back)\n"
      "Threads: OMP_NUM_THREADS, as in the programs (recorded).\n");
}

double parseSeconds(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || errno == ERANGE ||
      !(seconds > 0 && seconds <= 24 * 3600))
    throw UsageError(flag + " needs a number of seconds in (0, 86400], got '" +
                     value + "'");
  return seconds;
}

/// nullopt: --help was given.
std::optional<Options> parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h")
      return std::nullopt;
    if (arg == "--profile")
      options.profile = value();
    else if (arg == "-o" || arg == "--output")
      options.output = value();
    else if (arg == "--quick")
      options.quick = true;
    else if (arg == "--gemm-shapes")
      options.gemmShapes = value();
    else if (arg == "--max-seconds")
      options.maxSeconds = parseSeconds(arg, value());
    else if (arg == "--store")
      options.store = value();
    else if (arg == "--timeout")
      options.timeoutSeconds = parseSeconds(arg, value());
    else if (arg == "--compute-gap-ms") {
      std::string text = value();
      char *end = nullptr;
      errno = 0;
      double ms = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || errno == ERANGE ||
          !(ms >= 0 && ms <= 1000))
        throw UsageError(arg + " needs milliseconds in [0, 1000], got '" +
                         text + "'");
      options.computeGapSeconds = ms / 1e3;
    } else
      throw UsageError("unknown option '" + arg + "' (see --help)");
  }
  if (options.output.empty())
    throw UsageError("no output: pass -o OUT.json (see --help)");
  return options;
}

/// The store several ranks meet in: as the programs find it, else (one
/// node, a run id from the launcher) a directory of /tmp named by the run,
/// which rank 0 removes at the end.
std::string chooseStore(const Options &options,
                        const rtxrt::LaunchEnvironment &launch,
                        bool &temporary) {
  temporary = false;
  if (launch.world == 1)
    return "";
  if (!options.store.empty())
    return options.store;
  if (!launch.store.empty())
    return launch.store;
  if (launch.singleNode() && !launch.runId.empty()) {
    temporary = true;
    return "file:/tmp/rtx-calibrate-" + launch.runId;
  }
  throw UsageError("several ranks need a rendezvous store: pass --store "
                   "file:DIR or set RTX_STORE (rtx-launch --store does)");
}

int run(const Options &options) {
  rtxrt::LaunchEnvironment launch =
      rtxrt::readLaunchEnvironment(rtxrt::processEnvironment());
  bool temporaryStore = false;
  std::string store = chooseStore(options, launch, temporaryStore);
  std::vector<GemmShape> shapes = options.gemmShapes.empty()
                                      ? defaultGemmShapes(options.quick)
                                      : parseGemmShapes(options.gemmShapes);

  // Rank 0 writes: it checks the input and the output before minutes of
  // measurement, not after.
  nlohmann::json profile;
  HostInfo host = HostInfo::probe();
  if (launch.rank == 0) {
    profile = options.profile.empty() ? defaultProfile(host, launch.world)
                                      : readProfile(options.profile);
    checkWritable(options.output);
  }

  double budget = options.maxSeconds.value_or(options.quick ? 12.0 : 90.0);
  Session session(launch, store, options.timeoutSeconds);
  session.progress("%lld rank(s), %d thread(s) each, time budget %.0f s%s",
                   static_cast<long long>(session.world()),
                   rtxrt::getNumThreads(), budget,
                   options.quick ? " (quick)" : "");

  ComputePlan compute;
  compute.gemmShapes = shapes;
  compute.elementwiseElements = 16 << 20;
  compute.timing.repetitions = options.quick ? 3 : 5;
  compute.timing.minRepetitionSeconds = options.quick ? 0.01 : 0.05;
  // With several ranks the collectives need the rest of the budget.
  double computeDeadline = session.world() > 1 ? 0.5 * budget : budget;

  Calibration calibration;
  calibration.compute = measureCompute(session, compute, computeDeadline);

  CollectivePlan collectives;
  collectives.sizes = defaultMessageSizes(options.quick);
  collectives.timing = compute.timing;
  collectives.computeGapSeconds = options.computeGapSeconds;
  calibration.collectives = measureCollectives(session, collectives, budget);
  calibration.collectiveComputeGapSeconds = options.computeGapSeconds;

  calibration.date = isoDateNow();
  calibration.host = host.hostname;
  calibration.threads = rtxrt::getNumThreads();
  calibration.world = session.world();
  calibration.quick = options.quick;
  for (const char *name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    if (const char *value = std::getenv(name))
      calibration.threadEnvironment.emplace_back(name, value);

  // Every rank is done with the store and the groups before rank 0 removes
  // the store's directory.
  session.agreeMax({});
  if (session.rank() == 0) {
    if (options.profile.empty())
      fillDefaultProfile(profile, calibration);
    applyCalibration(profile, calibration);
    writeJsonFile(options.output, profile);
    session.progress("wrote %s after %.1f s", options.output.c_str(),
                     session.agreedElapsed());
    if (temporaryStore) {
      std::error_code ignored;
      std::filesystem::remove_all(store.substr(5), ignored);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::optional<Options> options = parseOptions(argc, argv);
    if (!options) {
      printHelp();
      return 0;
    }
    return run(*options);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "rtx-calibrate: error: %s\n", error.what());
    return 1;
  }
}
