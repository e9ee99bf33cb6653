//===- StepLoop.h - the training loop ---------------------------*- C++ -*-===//

#ifndef RTXRT_LIB_PROGRAM_STEPLOOP_H
#define RTXRT_LIB_PROGRAM_STEPLOOP_H

#include "Groups.h"
#include "Progress.h"
#include "StepTimeout.h"
#include "TokenData.h"

#include "rtxrt/device/StepRunner.h"

#include <functional>
#include <vector>

namespace rtxrt::program {

/// Runs the step function again and again: each step reads its batch (with
/// --data), runs, waits for its collectives and device work, reports its
/// loss and time, and passes every result that carries state on to the
/// argument with the same key.
struct StepLoop {
  const ProgramSpec &spec;
  StepContext &context;
  ProcessGroups &groups;
  const ProgramDevice &device;
  Progress &progress;
  /// --data: each step's batch; null without.
  const TokenData *data = nullptr;
  /// --eval-data: the held-out batches; null without. --eval-every and
  /// --eval-batches say when and how many.
  const TokenData *evalData = nullptr;
  EvalFlags eval = EvalFlags();
  /// Evaluate the state the loop starts from first, when its step is due
  /// (in-job recovery: a lost peer may have cut that evaluation short).
  bool evaluateFirst = false;
  /// The offload store's bound on bytes in flight (metrics); 0 without.
  int64_t offloadBoundBytes = 0;
  /// Told each iteration's wall time (--timeout auto); null: none.
  StepTimeout *timeout = nullptr;
  /// How a GPU program's device runtime runs the steps (stepRunnerOptions).
  StepRunnerOptions runnerOptions = StepRunnerOptions();

  /// Called after each step with the steps done in all (the runs behind
  /// --state or --resume included) and the next step's arguments, which
  /// hold the state; false stops the loop there (pre-emption). May be
  /// empty.
  std::function<bool(int64_t stepsDone, const std::vector<Tensor> &args)>
      afterStep = nullptr;
  /// The steps the last run() did (fewer than asked when afterStep stopped
  /// it).
  int64_t stepsRun = 0;
  /// Runs `steps` steps after the `stepsBefore` that the runs behind --state
  /// did, on `args`; returns the last step's results.
  std::vector<Tensor> run(std::vector<Tensor> &args, int64_t stepsBefore,
                          int64_t steps);

private:
  /// Whether the state after global step `globalStep` is evaluated: every
  /// --eval-every steps counted from the run's start (so a --state or
  /// --resume continuation and a rank replaced in the job evaluate at the
  /// steps a run without them does), and after `lastStep`.
  bool evaluates(int64_t globalStep, int64_t lastStep) const;
  /// The mean loss of the held-out batches on the state `args` (global step
  /// `globalStep`), reported; `args` and everything else the run keeps are
  /// left as they were.
  void evaluate(const std::vector<Tensor> &args, int64_t globalStep);
};

/// The step runner's options for this rank's program: the flags, why its
/// step cannot be captured as a CUDA graph (several ranks, offload,
/// tracing), the static plan, and rank 0's stdout for the log.
StepRunnerOptions stepRunnerOptions(const ProgramSpec &spec, bool noStepArena,
                                    bool noCudaGraph, int64_t rank,
                                    int64_t world, bool tracing);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_STEPLOOP_H
