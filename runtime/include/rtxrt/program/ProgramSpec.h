//===- ProgramSpec.h - what an emitted program says of itself ---*- C++ -*-===//
//
// rtx-translate writes one ProgramSpec per program: its arguments, results,
// mesh, collective groups and step function (one per pipeline coordinate).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_PROGRAMSPEC_H
#define RTXRT_PROGRAM_PROGRAMSPEC_H

#include "rtxrt/core/ArgSpec.h"
#include "rtxrt/device/DeviceRuntime.h"
#include "rtxrt/kernels/LrSchedule.h"
#include "rtxrt/program/StepContext.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

struct ResultSpec {
  std::string state; // the state key it carries to the next step, or ""
  Shape shape;       // local shape
  Sharding sharding;
  DType dtype = DType::F32;
  /// Its index among the step's results (rtx.step_result), or -1 for its
  /// position.
  int64_t index = -1;
  /// A flat buffer (rtx-shard-state): written as its members, each a result
  /// of its own with its own index and state key.
  FlatLayout flat;
  std::vector<ResultSpec> members;
  /// "cpu" or "nvme": the step writes it back to the offload tier and
  /// returns a reference; the run reads its value from the tier at the end.
  std::string offload;
};

using StepFunction = std::function<std::vector<Tensor>(
    StepContext &, const std::vector<Tensor> &)>;

/// What the ranks of one pipeline coordinate run (rtx-pipeline made one
/// function per coordinate; docs/pipeline.md).
struct PipelineStage {
  std::vector<ArgSpec> args;
  std::vector<ResultSpec> results;
  /// Per result: its index among the step's results (ProgramSpec::results).
  std::vector<int64_t> stepResult;
  int64_t lossResult = -1;
  StepFunction step;
  /// Offload slots the stage's step needs (mlir::rtx::offloadSlots).
  int64_t offloadSlots = 0;
};

/// What an emitted program tells runProgram about itself.
struct ProgramSpec {
  std::string name;
  MeshLayout mesh;
  std::vector<ArgSpec> args;
  std::vector<ResultSpec> results;
  int64_t lossResult = -1;
  /// Every axis list a collective of the step uses (the groups to create).
  std::vector<std::vector<std::string>> collectiveAxes;
  StepFunction step;
  /// rtx-shard-state{offload}: the most offload buffers the step holds in
  /// flight (fetched or being written) by its own order; the store bounds
  /// them by this (mlir::rtx::offloadSlots). 0: nothing is offloaded.
  int64_t offloadSlots = 0;
  /// rtx-plan-memory's static peak of a step on this rank and the part of
  /// it its arguments hold (mlir::rtx::planMemory; -1: not computed, as for
  /// a pipelined program). GPU programs log it beside the step arena's
  /// size.
  int64_t staticPeakBytes = -1, staticArgumentBytes = -1;
  /// The optimizer's learning-rate schedule (that of every update of the
  /// step; empty when they disagree or there is none): the metrics' `lr`
  /// of each step is its rate at the step's global number.
  std::optional<LrSchedule> lrSchedule;
  /// Set by GPU programs: arguments live on the device during the steps.
  const DeviceRuntime *device = nullptr;
  /// A pipelined program: the ranks whose coordinate on `pipelineAxis` is c
  /// run stages[c]; `results` and `lossResult` are then the whole step's,
  /// each held by the first coordinate that returns it, and `args` and
  /// `step` are unused. runProgram turns it into each rank's own view
  /// (`stage` >= 0: the coordinate; args, results, lossResult and step
  /// its stage's; stepResults the step's).
  std::string pipelineAxis;
  std::vector<PipelineStage> stages;
  int64_t stage = -1;
  std::vector<ResultSpec> stepResults;
  int64_t stepLossResult = -1; // the loss's index in stepResults
  int64_t stepLossOwner = -1;  // the coordinate that returns the loss
  /// The first coordinate that returns the step's result `i`.
  int64_t ownerOf(int64_t i) const {
    for (size_t c = 0; c < stages.size(); ++c)
      for (int64_t r : stages[c].stepResult)
        if (r == i)
          return c;
    return -1;
  }
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_PROGRAMSPEC_H
