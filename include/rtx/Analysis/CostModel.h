//===- CostModel.h - the cost of a whole program ---------------*- C++ -*-===//
//
// The program-level cost model: the per-op costs of CostOpInterface (exact
// FLOPs and bytes of each op at its current shapes, found from the op) summed
// over a function, with the bytes each collective moves per group of mesh
// axes. Run on a partitioned program it is one rank's cost. This is where the
// auto-partitioner (milestone 2, part 6) reads costs; it adds the hardware
// (roofline, link alpha-beta) on top.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_COSTMODEL_H
#define RTX_ANALYSIS_COSTMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <map>
#include <string>

namespace mlir::rtx {

struct ProgramCost {
  /// Floating-point operations and bytes read plus written by the ops that
  /// compute (CostOpInterface).
  int64_t flops = 0;
  int64_t bytes = 0;
  /// FLOPs by op name ("rtx.linear"), for reports.
  std::map<std::string, int64_t> flopsByOp;
  /// Bytes of the tensors handed to collectives, by their mesh axes joined
  /// with ',' ("tp", "dp,tp"); sync and async forms alike.
  std::map<std::string, int64_t> collectiveBytes;
  /// The number of collectives by the same key.
  std::map<std::string, int64_t> collectiveCount;
};

/// The cost of one execution of `function`'s body.
ProgramCost analyzeProgramCost(func::FuncOp function);

/// The kind of work an op does, by which reports group ops (`rtx report`'s
/// roofline table; the emitted op table, rtxrt::OpInfo::kind): "matmul"
/// (an op whose FLOPs are a matrix product, CostOpInterface's contraction
/// shape), "attention", "norm" (layernorm, RMSNorm, softmax and their
/// gradients), "loss" (cross-entropy), "elementwise" (the Elementwise trait,
/// GELU, SwiGLU, dropout, rotary embeddings), "reduction", "layout"
/// (reshape, transpose, slice, split, concat, broadcast, pad, embedding
/// gathers), "optimizer", "collective" (and point to point), "other".
llvm::StringRef opWorkKind(Operation *op);

/// One op's weight when work is balanced between pipeline stages or between
/// a backward's B and W parts: its FLOPs plus 4 per byte it reads and writes
/// (a machine doing about 4 FLOPs in the time it moves a byte, so that
/// elementwise chains count), plus 1; 1 for an op without a cost.
int64_t balanceCost(Operation *op);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_COSTMODEL_H
