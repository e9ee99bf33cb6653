//===- rtx-run.cpp - the reference executor -------------------------------===//
//
//   rtx-run FILE.mlir [--entry F] [--seed S] [--inputs DIR | --random]
//           [--params PATH [--params-partial]] [--out DIR] [--ranks N]
//           [--steps N] [--metrics FILE]
//   rtx-run --compare REF.mlir DIST.mlir --ranks N [--tolerance T]
//
// Interprets a function on the CPU kernels of librtxrt, on one rank or as N
// simulated ranks of a partitioned module, and prints one line per result.
// With --compare, runs a reference (single-device) and a distributed program
// on the same global inputs and parameters and reports their difference.
// --metrics FILE writes one JSON line per step in the format of the emitted
// programs' --metrics (docs/rtx-run.md says which figures it leaves out).
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Executor/Executor.h"

#include "rtxrt/core/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using rtxrt::Tensor;

namespace cl = llvm::cl;

static cl::OptionCategory category("rtx-run options");
static cl::list<std::string> files(cl::Positional, cl::desc("FILE.mlir"),
                                   cl::OneOrMore, cl::cat(category));
static cl::opt<std::string> entry("entry", cl::desc("Function to run"),
                                  cl::value_desc("F"), cl::cat(category));
static cl::opt<int64_t> seed("seed", cl::desc("Seed of random inputs"),
                             cl::init(0), cl::cat(category));
static cl::opt<std::string>
    inputsDir("inputs",
              cl::desc("Directory of NAME.npy inputs (argN.npy for "
                       "function arguments)"),
              cl::value_desc("DIR"), cl::cat(category));
static cl::opt<bool> randomInputs("random",
                                  cl::desc("Draw missing inputs at random"),
                                  cl::cat(category));
static cl::opt<std::string>
    paramsPath("params",
               cl::desc("Parameter values: a directory of NAME.npy, a "
                        "safetensors file, or a directory of safetensors "
                        "shards"),
               cl::value_desc("PATH"), cl::cat(category));
static cl::opt<bool> paramsPartial(
    "params-partial",
    cl::desc("Initialise the parameters that --params PATH lacks from their "
             "initializers (each is named on stderr); without it, a missing "
             "one is an error"),
    cl::cat(category));
static cl::opt<std::string> stateDir(
    "state",
    cl::desc("Continue from DIR/KEY.npy (parameters as param:NAME, optimizer "
             "state by key), as an emitted program's --save-state writes it"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> offloadDir(
    "offload-dir",
    cl::desc("Folder of the offloaded state of a step compiled with "
             "offload=nvme (each simulated rank uses DIR/rank-R)"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string> outDir("out",
                                   cl::desc("Write resultN.npy into DIR"),
                                   cl::value_desc("DIR"), cl::cat(category));
static cl::opt<int64_t> ranks("ranks", cl::desc("Number of simulated ranks"),
                              cl::init(1), cl::cat(category));
static cl::opt<bool>
    compare("compare",
            cl::desc("Compare REF.mlir (1 rank) with DIST.mlir "
                     "(--ranks N) on the same inputs"),
            cl::cat(category));
static cl::opt<double> tolerance(
    "tolerance",
    cl::desc("Relative-norm tolerance for --compare (default by dtype: f32 "
             "1e-5, bf16/f16 1e-2, f64 1e-10)"),
    cl::init(-1.0), cl::cat(category));
static cl::opt<int64_t>
    steps("steps",
          cl::desc("Run the function N times, feeding each result "
                   "marked rtx.state back into its argument (a "
                   "training loop); prints the loss per step"),
          cl::init(1), cl::cat(category));
static cl::opt<std::string> metricsPath(
    "metrics",
    cl::desc("Write one JSON line per step (step, loss, step_time_ms, "
             "tokens_per_s) into FILE, as emitted programs' --metrics does"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<double>
    timeout("timeout", cl::desc("Seconds a rank may wait in a collective"),
            cl::init(60.0), cl::cat(category));

static OwningOpRef<ModuleOp> parseFile(const std::string &path,
                                       MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  return parseSourceFile<ModuleOp>(path, sourceMgr, &context);
}

struct Stats {
  double sum = 0, l2 = 0;
  bool finite = true;
};
static Stats statsOf(const Tensor &t) {
  Stats s;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.getAsDouble(i);
    s.finite = s.finite && std::isfinite(v);
    s.sum += v;
    s.l2 += v * v;
  }
  s.l2 = std::sqrt(s.l2);
  return s;
}

static std::string typeString(const Tensor &t) {
  std::string s = "tensor<";
  for (int64_t d : t.shape())
    s += std::to_string(d) + "x";
  return s + rtxrt::dtypeName(t.dtype()) + ">";
}

static void printResults(const std::vector<Tensor> &results) {
  for (size_t i = 0; i < results.size(); ++i) {
    Stats s = statsOf(results[i]);
    llvm::outs() << llvm::format("result %zu: %s sum=%.6e l2=%.6e%s", i,
                                 typeString(results[i]).c_str(), s.sum, s.l2,
                                 s.finite ? "" : " (contains NaN/Inf)");
    if (!outDir.empty()) {
      std::string path = outDir + "/result" + std::to_string(i) + ".npy";
      rtxrt::writeNpy(path, results[i]);
      llvm::outs() << " -> " << path;
    }
    llvm::outs() << "\n";
  }
}

static double defaultTolerance(rtxrt::DType dtype) {
  switch (dtype) {
  case rtxrt::DType::BF16:
  case rtxrt::DType::F16:
    return 1e-2;
  case rtxrt::DType::F64:
    return 1e-10;
  default:
    return 1e-5;
  }
}

/// Prints max-abs and relative-norm error per result; false if any exceeds
/// its tolerance or is not finite.
static bool compareResults(const std::vector<Tensor> &ref,
                           const std::vector<Tensor> &dist) {
  if (ref.size() != dist.size()) {
    llvm::errs() << "rtx-run: error: the reference returns " << ref.size()
                 << " results, the distributed program " << dist.size() << "\n";
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].shape() != dist[i].shape()) {
      llvm::outs() << "result " << i << ": FAIL shape " << typeString(dist[i])
                   << " vs reference " << typeString(ref[i]) << "\n";
      ok = false;
      continue;
    }
    double maxAbs = 0, diff2 = 0, ref2 = 0;
    bool finite = true;
    for (int64_t k = 0; k < ref[i].numel(); ++k) {
      double a = dist[i].getAsDouble(k), b = ref[i].getAsDouble(k);
      finite = finite && std::isfinite(a) && std::isfinite(b);
      maxAbs = std::max(maxAbs, std::fabs(a - b));
      diff2 += (a - b) * (a - b);
      ref2 += b * b;
    }
    double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    double tol = tolerance >= 0 ? tolerance.getValue()
                                : defaultTolerance(ref[i].dtype());
    bool pass = finite && rel <= tol;
    ok = ok && pass;
    llvm::outs() << llvm::format(
        "result %zu: %s max_abs=%.3e rel_norm=%.3e tolerance=%.1e %s\n", i,
        typeString(ref[i]).c_str(), maxAbs, rel, tol,
        pass ? "PASS" : (finite ? "FAIL" : "FAIL (NaN/Inf)"));
  }
  return ok;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "rtx-run: interpret an rtx function on CPU (one rank or N simulated "
      "ranks)\n");

  if (compare ? files.size() != 2 : files.size() != 1) {
    llvm::errs() << "rtx-run: error: "
                 << (compare ? "--compare takes REF.mlir and DIST.mlir"
                             : "expected one FILE.mlir (or --compare REF "
                               "DIST)")
                 << "\n";
    return 2;
  }
  if (compare && !metricsPath.empty()) {
    llvm::errs() << "rtx-run: error: --metrics is for a run, not for "
                    "--compare\n";
    return 2;
  }
  if (!outDir.empty())
    llvm::sys::fs::create_directories(outDir);

  DialectRegistry registry;
  registry.insert<rtx::RTXDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  rtx::ExecutorOptions options;
  options.entry = entry;
  options.seed = seed;
  options.inputsDir = inputsDir;
  options.randomInputs = randomInputs;
  options.params = paramsPath;
  options.paramsPartial = paramsPartial;
  options.stateDir = stateDir;
  options.offloadDir = offloadDir;
  options.collectiveTimeoutSeconds = timeout;
  options.steps = steps;
  options.metricsPath = metricsPath;
  if (steps > 1)
    options.onStep = [](const rtxrt::StepRecord &record) {
      if (!record.hasLoss)
        return;
      llvm::outs() << llvm::format("step %lld/%lld: loss=%.6e\n",
                                   (long long)record.step,
                                   (long long)steps.getValue(), record.loss);
      llvm::outs().flush();
    };

  try {
    OwningOpRef<ModuleOp> module = parseFile(files[0], context);
    if (!module)
      return 1;
    if (!compare) {
      options.numRanks = ranks;
      rtx::ExecutionResult result = rtx::execute(*module, options);
      printResults(result.results);
      return 0;
    }
    OwningOpRef<ModuleOp> dist = parseFile(files[1], context);
    if (!dist)
      return 1;
    // --offload-dir is the distributed program's (the reference is one
    // device's plain step).
    options.numRanks = 1;
    options.offloadDir.clear();
    rtx::ExecutionResult ref = rtx::execute(*module, options);
    options.numRanks = ranks;
    options.offloadDir = offloadDir;
    rtx::ExecutionResult got = rtx::execute(*dist, options, ref.inputs);
    // Parts of a user's tensor (a fused projection split for tp) are
    // compared joined, as the reference holds them.
    return compareResults(ref.userResults, got.userResults) ? 0 : 1;
  } catch (const std::exception &error) {
    llvm::errs() << "rtx-run: error: " << error.what() << "\n";
    return 1;
  }
}
