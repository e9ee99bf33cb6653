//===- ActivationMemory.h - peak bytes of live activations ------*- C++ -*-===//
//
// A static liveness estimate over a function's straight-line body: at each
// op, the tensors computed earlier that are still to be used (by a later op
// or the return) are live; the peak of their bytes is what the step needs
// for activations, besides its arguments (parameters, optimizer state,
// inputs), which are not counted. rtx-recompute reports it; the memory
// planner of milestone 2's part 5 (rtx-plan-memory) will add the other
// kinds.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_ACTIVATIONMEMORY_H
#define RTX_ANALYSIS_ACTIVATIONMEMORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace mlir::rtx {

/// Bytes of a ranked tensor type (0 for other types).
int64_t tensorBytes(Type type);

/// Megatron's selective recompute policy: ops that are cheap to run again
/// and whose results are large for their cost (elementwise chains, softmax,
/// layout). rtx-recompute recomputes them; the planner prices that.
bool isCheapToRecompute(Operation *op);

/// The peak bytes of tensors computed in `function` and live at once.
int64_t peakActivationBytes(func::FuncOp function);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_ACTIVATIONMEMORY_H
