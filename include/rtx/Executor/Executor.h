//===- Executor.h - rtx-run's reference executor ----------------*- C++ -*-===//
//
// Interprets an rtx function on the CPU kernels of librtxrt: on one rank, or
// as N simulated ranks (threads) of a module partitioned for a mesh, with an
// in-process implementation of every collective and of send/recv. It is the
// oracle that says whether a pass kept a program's meaning.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_EXECUTOR_EXECUTOR_H
#define RTX_EXECUTOR_EXECUTOR_H

#include "rtxrt/observe/MetricsFile.h"
#include "rtxrt/core/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mlir::rtx {

/// The most ranks `execute` simulates: one thread each, in one process
/// (beyond it, a run would exhaust threads or memory long before it helps).
constexpr int64_t kMaxSimulatedRanks = 1024;

struct ExecutorOptions {
  /// Function to run; empty: the only function, else `main`.
  std::string entry;
  /// Number of ranks; more than 1 needs a mesh with that many ranks.
  int64_t numRanks = 1;
  /// Directory of NAME.npy for `rtx.input "NAME"` and argN.npy for the N-th
  /// data argument (parameter and optimizer-state arguments are not counted).
  /// Empty: inputs must be random.
  std::string inputsDir;
  /// Draw missing inputs from the seeded generator instead of failing.
  bool randomInputs = false;
  /// Parameter values (global shapes) in the user's names: a directory of
  /// NAME.npy, a safetensors file or a directory of safetensors shards
  /// (rtxrt::ArgumentSources::params); it must hold every parameter unless
  /// paramsPartial is set.
  std::string params;
  /// Parameters that `params` lacks are initialised from their initializer
  /// (each named once on stderr) instead of being an error.
  bool paramsPartial = false;
  /// Directory of KEY.npy (global shapes) to continue a run from, as an
  /// emitted program's --save-state writes it: parameters from
  /// param:NAME.npy and every optimizer-state argument from its key; all
  /// must be there. Excludes params.
  std::string stateDir;
  /// The folder of offloaded buffers of a step compiled with offload=nvme
  /// (each simulated rank uses DIR/rank-R); refused for other steps.
  std::string offloadDir;
  /// Parameter values (global shapes) by name; they take precedence over
  /// --params and over initializers (used by gradient checks).
  std::map<std::string, rtxrt::Tensor> paramValues;
  /// Seed for random inputs (parameters use their own seeds).
  int64_t seed = 0;
  /// Seconds a rank may wait in a collective before the executor looks for
  /// a deadlock; a deadlock is reported as soon as every rank is stuck.
  double collectiveTimeoutSeconds = 60.0;
  /// Runs of the function; after each, every result marked `rtx.state = K`
  /// becomes the argument marked with the same key (a training loop).
  int64_t steps = 1;
  /// Called after each step (on the calling thread or rank 0's) with its
  /// number (1-based), its loss when the function has one (its first scalar
  /// float result without `rtx.state`), and rank 0's time in the
  /// interpreter. A loss that holds partial sums is known only once every
  /// rank has finished: then all calls come after the run. No collective
  /// time: the simulated ranks share the CPUs and wait for one another's
  /// interpretation, which says nothing about a real program's collectives.
  std::function<void(const rtxrt::StepRecord &)> onStep;
  /// Where to write each step as a JSON line (rtxrt::MetricsFile, the
  /// format of the emitted programs' --metrics, without the collective
  /// figures); empty: nowhere. The file is opened before the first step.
  std::string metricsPath;
};

/// Global (reassembled) inputs and results of one run, by name.
struct ExecutionResult {
  /// Results of the last step, reassembled to global shapes.
  std::vector<rtxrt::Tensor> results;
  /// The loss after each step (empty when the function has none).
  std::vector<double> losses;
  /// The global inputs that were used (read or drawn), by name.
  std::map<std::string, rtxrt::Tensor> inputs;
  /// `results` with the parts of users' tensors (rtx.part_of, made by
  /// rtx-split-fused-projections) joined: what a program that was not
  /// split returns.
  std::vector<rtxrt::Tensor> userResults;
};

/// Runs `options.entry` of `module`. Throws rtxrt::Error with a message that
/// names the op, value or rank on failure (unsupported op, bad input file,
/// deadlock, kernel error).
ExecutionResult
execute(ModuleOp module, const ExecutorOptions &options,
        const std::map<std::string, rtxrt::Tensor> &inputs = {});

/// The function `execute` would run.
func::FuncOp findEntry(ModuleOp module, llvm::StringRef entry);

} // namespace mlir::rtx

#endif // RTX_EXECUTOR_EXECUTOR_H
