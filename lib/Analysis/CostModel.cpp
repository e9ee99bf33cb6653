//===- CostModel.cpp - the cost of a whole program ------------------------===//

#include "rtx/Analysis/CostModel.h"

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

using namespace mlir;
using namespace mlir::rtx;

ProgramCost mlir::rtx::analyzeProgramCost(func::FuncOp function) {
  ProgramCost cost;
  function.walk([&](Operation *op) {
    if (auto costOp = dyn_cast<CostOpInterface>(op)) {
      int64_t flops = costOp.getFlops();
      cost.flops += flops;
      cost.bytes += costOp.getBytesAccessed();
      cost.flopsByOp[op->getName().getStringRef().str()] += flops;
      return;
    }
    if (!isa<CollectiveOpInterface>(op))
      return;
    std::string key;
    for (Attribute axis : op->getAttrOfType<ArrayAttr>("axes"))
      key += (key.empty() ? "" : ",") + cast<StringAttr>(axis).getValue().str();
    cost.collectiveBytes[key] += getTensorBytes(op->getOperand(0).getType());
    cost.collectiveCount[key] += 1;
  });
  return cost;
}

StringRef mlir::rtx::opWorkKind(Operation *op) {
  if (isa<CollectiveOpInterface, SendOp, RecvOp, SendStartOp, RecvStartOp>(op))
    return "collective";
  if (isa<AdamWUpdateOp, SGDUpdateOp>(op))
    return "optimizer";
  // Before matmul: attention's FLOPs are products too.
  if (isa<AttentionOp, AttentionGradOp>(op))
    return "attention";
  if (auto cost = dyn_cast<CostOpInterface>(op))
    if (!cost.getContractionShape().empty())
      return "matmul";
  if (isa<LayerNormOp, LayerNormGradOp, RMSNormOp, RMSNormGradOp, SoftmaxOp,
          SoftmaxGradOp>(op))
    return "norm";
  if (isa<CrossEntropyOp, CrossEntropyGradOp, VocabLogitStatsOp,
          VocabCrossEntropyOp, VocabCrossEntropyGradOp>(op))
    return "loss";
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<GeluOp, SwiGLUOp, DropoutOp, RopeOp, RopeGradOp, UnaryGradOp>(op))
    return "elementwise";
  if (isa<ReduceOp>(op))
    return "reduction";
  if (isa<ReshapeOp, TransposeOp, SliceOp, SplitOp, ConcatOp, BroadcastOp,
          PadOp, EmbeddingOp, EmbeddingGradOp, MeshSliceOp>(op))
    return "layout";
  return "other";
}

int64_t mlir::rtx::balanceCost(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getFlops() + 4 * cost.getBytesAccessed() + 1;
  return 1;
}
