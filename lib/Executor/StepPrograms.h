//===- StepPrograms.h - what each simulated rank runs -----------*- C++ -*-===//
//
// The step of a module as rtx-run runs it: one function, or one per pipeline
// coordinate (rtx-pipeline), each with the runtime's view of its arguments
// (rtxrt::ArgSpec, as emitted programs load them) and a table of where each
// of its results sits among the step's.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_STEPPROGRAMS_H
#define RTX_LIB_EXECUTOR_STEPPROGRAMS_H

#include "Interpreter.h"

#include "rtx/Analysis/ProgramDescription.h"
#include "rtxrt/program/Arguments.h"
#include "rtxrt/program/PipelineCoordinates.h"
#include "rtxrt/program/StateFeedback.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlir::rtx {

/// What one pipeline coordinate's ranks run (the whole step when the module
/// has no pipeline): its function, what each argument is, and where each of
/// its results sits among the step's results (-1: a flat buffer, whose
/// members are results of their own), and the state it carries on.
struct RankProgram {
  func::FuncOp function;
  ProgramDescription program;
  std::vector<rtxrt::ArgSpec> args;
  std::vector<int64_t> stepResult;
  /// Which argument each result's state replaces after a step, as emitted
  /// programs' step loop feeds it.
  rtxrt::StateFeedback feedback;
};

/// The runtime's view of a parameter: an `rtx.param` op's.
rtxrt::ArgSpec toArgSpec(const ParamSpec &param);

/// The functions of the step: the pipeline's, by coordinate, when `entry` is
/// empty and the module has them; otherwise findEntry's.
struct StepFunctions {
  std::vector<func::FuncOp> functions;
  bool pipelined = false;
  std::string pipelineAxis;
};
StepFunctions stepFunctions(ModuleOp module, StringRef entry);

/// The step's programs on a mesh, and the ranks' pipeline coordinates.
class StepPrograms {
public:
  /// Throws Error when the pipeline does not fit the mesh, a function cannot
  /// be described, or a result of the step has no function returning it.
  StepPrograms(const StepFunctions &step, MeshOp meshOp,
               const rtxrt::MeshLayout &mesh);

  const rtxrt::MeshLayout &mesh() const { return mesh_; }
  int64_t numRanks() const { return mesh_.numRanks(); }
  const std::vector<RankProgram> &programs() const { return programs_; }
  /// The program of `rank`'s pipeline coordinate.
  const RankProgram &of(int64_t rank) const {
    return programs_[coordinateOf(rank)];
  }
  /// Where ranks sit along the pipeline, as emitted programs place them.
  const rtxrt::PipelineCoordinates &pipeline() const { return pipeline_; }
  /// `rank`'s pipeline coordinate (0 without a pipeline).
  int64_t coordinateOf(int64_t rank) const {
    return pipeline_.coordinateOf(rank);
  }
  /// The rank with `rank`'s coordinates but `c` on the pipeline axis; with
  /// c = 0, the rank whose place the shardings describe.
  int64_t withCoordinate(int64_t rank, int64_t c) const {
    return pipeline_.withCoordinate(rank, c);
  }

  int64_t numStepResults() const { return numStepResults_; }
  /// Is step result `i` a member of a flat buffer (rtx-shard-state)?
  bool isFlatMember(int64_t i) const { return flatMembers_.count(i); }
  /// The first coordinate that returns step result `i`, and its index there.
  std::pair<int64_t, int64_t> ownerOf(int64_t i) const { return owner_[i]; }
  /// The coordinate whose program returns the loss (-1: none), the loss's
  /// index among its results, and its sharding.
  int64_t lossOwner() const { return lossOwner_; }
  int64_t lossIndex() const {
    return lossOwner_ < 0 ? -1 : programs_[lossOwner_].program.lossResult;
  }
  ShardingAttr lossSharding() const;

private:
  void addProgram(func::FuncOp function, MeshOp meshOp);

  const rtxrt::MeshLayout &mesh_;
  rtxrt::PipelineCoordinates pipeline_;
  std::vector<RankProgram> programs_;
  int64_t numStepResults_ = 0;
  std::set<int64_t> flatMembers_;
  std::vector<std::pair<int64_t, int64_t>> owner_;
  int64_t lossOwner_ = -1;
};

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_STEPPROGRAMS_H
