//===- StepRunner.h - how a device runtime runs steps -----------*- C++ -*-===//
//
// The step loop (runtime/lib/program/StepLoop.cpp) hands each step of a GPU
// program to its device runtime's StepRunner. The GPU runtime's runner
// (runtime/lib/gpu/StepRunner.cu) serves the step's allocations from one
// planned arena and, on CUDA, captures the step once as a CUDA graph and
// replays it; data-dependent checks are read after the step, never inside
// it (docs/gpu.md "One arena, one graph per step").
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_DEVICE_STEPRUNNER_H
#define RTXRT_DEVICE_STEPRUNNER_H

#include "rtxrt/core/Tensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rtxrt {

/// How the steps of one loop run (the program's flags and its shape).
struct StepRunnerOptions {
  /// --no-step-arena turns the arena off (every buffer from the pool).
  bool arena = true;
  /// --no-cuda-graph turns capture off (the step runs from the host).
  bool cudaGraph = true;
  /// Why this program's step cannot be captured (several ranks, offload,
  /// tracing); empty: it can.
  std::string noCaptureReason;
  /// rtx-plan-memory's static peak of the step and the part its arguments
  /// hold (ProgramSpec; -1: unknown), for the log's comparison.
  int64_t staticPeakBytes = -1, staticArgumentBytes = -1;
  /// Where the runner says what it does (rank 0's stdout); may be empty.
  std::function<void(const std::string &line)> log;
};

/// One step: the program's step function on its arguments.
using StepBody =
    std::function<std::vector<Tensor>(const std::vector<Tensor> &args)>;

class StepRunner {
public:
  virtual ~StepRunner() = default;
  /// Runs the `step`th step of the loop (from 1) and returns its results;
  /// its device work may still be queued. Throws an Error when a check
  /// made on the device during the step failed.
  virtual std::vector<Tensor> run(int64_t step, const StepBody &body,
                                  const std::vector<Tensor> &args) = 0;
  /// After the loop's last step: a summary for the log.
  virtual void finish() = 0;
};

} // namespace rtxrt

#endif // RTXRT_DEVICE_STEPRUNNER_H
