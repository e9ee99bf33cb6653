//===- UserTensors.h - a step's results in the user's tensors --*- C++ -*-===//
//
// rtx-split-fused-projections makes one user parameter (GPT-2's fused
// c_attn) several IR parameters, `NAME@k`, each a block of NAME
// (rtx.part_of); their optimizer state follows them (`exp_avg:NAME@k`).
// A program compared with one that was not split (rtx-run --compare) has
// more results: joining the parts gives the user's tensors back.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_USERTENSORS_H
#define RTX_LIB_EXECUTOR_USERTENSORS_H

#include "StepPrograms.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::rtx {

/// The state key of each step result ("" for results without one).
std::vector<std::string> stepResultKeys(const StepPrograms &step);

/// `results` (with their state `keys`) with the parts of each user tensor
/// joined into one, at the place of its first part. `parts` gives each
/// parameter's rtx.part_of by its IR name.
std::vector<rtxrt::Tensor>
joinUserParts(const std::vector<rtxrt::Tensor> &results,
              const std::vector<std::string> &keys,
              const std::map<std::string, rtxrt::PartOf> &parts);

/// The rtx.part_of of each parameter of the step that has one.
std::map<std::string, rtxrt::PartOf> paramParts(const StepPrograms &step);

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_USERTENSORS_H
