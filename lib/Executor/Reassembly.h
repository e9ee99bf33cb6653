//===- Reassembly.h - the ranks' results as global tensors ------*- C++ -*-===//
//
// The oracle's half of reassembly: besides placing each rank's block, it
// checks what emitted programs take on trust. Replicas of a block must
// agree: a rank that disagrees holds a partial sum or a wrong value that the
// sharding does not declare, a partitioning bug worth reporting. A result
// that several pipeline coordinates return (a weight two stages tie, the
// optimizer's step count) must be the same on all of them.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_REASSEMBLY_H
#define RTX_LIB_EXECUTOR_REASSEMBLY_H

#include "StepPrograms.h"

#include <vector>

namespace mlir::rtx {

class Reassembly {
public:
  /// `rankResults[r]`: rank r's results of the last step.
  Reassembly(const StepPrograms &step,
             const std::vector<std::vector<rtxrt::Tensor>> &rankResults)
      : step_(step), rankResults_(rankResults) {}

  /// Every result of the step at its global shape. Throws Error naming the
  /// result and the ranks when replicas disagree.
  std::vector<rtxrt::Tensor> results() const;

  /// The global value of a scalar from the ranks' `local` values (one per
  /// rank): the canonical replicas of coordinate `owner`, summed over the
  /// axes that hold partial sums.
  static double globalScalar(const StepPrograms &step,
                             const std::vector<double> &local, int64_t owner,
                             ShardingAttr sharding);

private:
  /// Step result `i` (not a flat buffer's member).
  rtxrt::Tensor assemble(int64_t i) const;
  /// Checks that `rank`, of another coordinate than `c0`, holds the same
  /// value of step result `i` as the owner (`c0`, `j0`) when it returns it.
  void checkOtherStage(int64_t i, int64_t rank, int64_t c0, int64_t j0) const;
  /// The members of flat buffers into `results`.
  void assembleFlat(std::vector<rtxrt::Tensor> &results) const;

  const StepPrograms &step_;
  const std::vector<std::vector<rtxrt::Tensor>> &rankResults_;
};

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_REASSEMBLY_H
