//===- Recompute.cpp - the rtx-recompute pass -----------------------------===//
//
// Activation recompute: the backward pass computes again, from kept values,
// the forward activations it needs, instead of keeping them from the
// forward pass. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "LayerBoundaries.h"

#include "rtx/Analysis/ActivationMemory.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXRECOMPUTE
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
enum class Policy { None, Full, Selective };

struct RTXRecomputePass
    : mlir::rtx::impl::RTXRecomputeBase<RTXRecomputePass> {
  using RTXRecomputeBase::RTXRecomputeBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    std::optional<Policy> p = llvm::StringSwitch<std::optional<Policy>>(policy)
                                  .Case("none", Policy::None)
                                  .Case("full", Policy::Full)
                                  .Case("selective", Policy::Selective)
                                  .Default(std::nullopt);
    if (!p) {
      function.emitError() << "rtx-recompute: unknown policy '"
                           << std::string(policy)
                           << "'; expected none, full or selective";
      return signalPassFailure();
    }
    if (function.isExternal())
      return;
    int64_t before = peakActivationBytes(function);
    if (*p != Policy::None && failed(recompute(function, *p)))
      return signalPassFailure();
    if (remarks)
      function.emitRemark() << "peak activation bytes " << before << " -> "
                            << peakActivationBytes(function) << " (policy "
                            << std::string(policy) << ")";
  }

  LogicalResult recompute(func::FuncOp function, Policy p);
};
} // namespace

LogicalResult RTXRecomputePass::recompute(func::FuncOp function, Policy p) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The loss: the last result that is not a gradient (rtx-autodiff).
  Value loss;
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    if (!function.getResultAttr(i, RTXDialect::getGradOfAttrName()))
      loss = ret.getOperand(i);
  if (!loss || function.getNumResults() == 1)
    return function.emitError()
           << "rtx-recompute runs after rtx-autodiff: the function has no "
              "gradients to recompute for";
  // The forward pass: what the loss is computed from.
  llvm::DenseSet<Operation *> forward;
  SmallVector<Value> work = {loss};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    work.append(def->operand_begin(), def->operand_end());
  }
  auto isSource = [](Operation *op) {
    return isa<ParamOp, InputOp, ConstantOp>(op);
  };
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    if (forward.contains(&op) && !isSource(&op))
      forwardOps.push_back(&op);

  // Kept values. Full: the layer inputs, the one tensor live at a layer
  // boundary of the forward pass (as rtx-split-stages finds them).
  llvm::DenseSet<Value> kept;
  if (p == Policy::Full)
    for (const LayerBoundary &boundary : findLayerBoundaries(forwardOps, /*onlyTheseUses=*/true))
      kept.insert(boundary.live);
  auto recomputable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !forward.contains(def) || isSource(def) || v == loss)
      return false;
    return p == Policy::Full ? !kept.contains(v) : isCheapToRecompute(def);
  };

  // Each backward use of a recomputable forward value takes a copy made
  // right before the first such use, from kept values.
  llvm::DenseMap<Value, Value> copies;
  OpBuilder b(function.getContext());
  // The stage of the backward op a copy is made for (copies run there).
  IntegerAttr userStage;
  std::function<Value(Value)> copyOf = [&](Value v) -> Value {
    if (!recomputable(v))
      return v;
    if (Value copy = copies.lookup(v))
      return copy;
    Operation *def = v.getDefiningOp();
    IRMapping mapping;
    for (Value operand : def->getOperands())
      mapping.map(operand, copyOf(operand));
    Operation *clone = b.clone(*def, mapping);
    // It runs in the backward action of the stage that needs it (the
    // forward op's own, or the next one's for a stage's last activation).
    if (userStage) {
      clone->setAttr(RTXDialect::getStageAttrName(), userStage);
      clone->setAttr(RTXDialect::getBackwardAttrName(),
                     UnitAttr::get(function.getContext()));
    }
    for (auto [original, result] :
         llvm::zip(def->getResults(), clone->getResults()))
      copies[original] = result;
    return copies.lookup(v);
  };
  SmallVector<Operation *> backward;
  for (Operation &op : body)
    if (!forward.contains(&op) && !isSource(&op))
      backward.push_back(&op);
  for (Operation *op : backward)
    for (OpOperand &use : op->getOpOperands()) {
      if (!recomputable(use.get()))
        continue;
      b.setInsertionPoint(op);
      userStage =
          op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName());
      use.set(copyOf(use.get()));
    }
  return success();
}
