//===- FuseCrossEntropy.cpp - the rtx-fuse-cross-entropy pass -------------===//
//
// rtx.cross_entropy + rtx.cross_entropy_grad on the same logits ->
// rtx.cross_entropy_with_grad. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "Fusion.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXFUSECROSSENTROPY
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

/// The loss computed before `grad` in its block on the same logits, labels
/// and ignore_index, if any.
CrossEntropyOp lossOf(CrossEntropyGradOp grad) {
  for (Operation *user : grad.getLogits().getUsers()) {
    auto loss = dyn_cast<CrossEntropyOp>(user);
    if (loss && loss->getBlock() == grad->getBlock() &&
        loss->isBeforeInBlock(grad) && loss.getLabels() == grad.getLabels() &&
        loss.getIgnoreIndexAttr() == grad.getIgnoreIndexAttr())
      return loss;
  }
  return nullptr;
}

/// The place of the fused op: the loss, when the seed is there (a constant
/// seed defined later is cloned up), else the gradient, when the loss is
/// used only after it. Sets `seed` to the loss gradient to use there.
Operation *placeOf(CrossEntropyOp loss, CrossEntropyGradOp grad,
                   DominanceInfo &dom, Value &seed) {
  seed = grad.getLossGrad();
  if (dom.properlyDominates(seed, loss))
    return loss;
  if (auto constant = seed.getDefiningOp<ConstantOp>()) {
    OpBuilder b(loss);
    seed = b.clone(*constant)->getResult(0);
    return loss;
  }
  if (allUsedAfter(loss->getResults(), grad, {}, dom))
    return grad;
  return nullptr;
}

bool fuse(CrossEntropyGradOp grad, DominanceInfo &dom) {
  CrossEntropyOp loss = lossOf(grad);
  if (!loss)
    return false;
  Value seed;
  Operation *place = placeOf(loss, grad, dom, seed);
  if (!place)
    return false;
  OpBuilder b(place);
  auto fused = CrossEntropyWithGradOp::create(
      b, grad.getLoc(), loss.getType(), grad.getType(), grad.getLogits(),
      grad.getLabels(), seed, grad.getIgnoreIndexAttr());
  copyDiscardableAttrs(loss, fused);
  setResultShardings(fused, {loss, grad});
  loss.getResult().replaceAllUsesWith(fused.getLoss());
  grad.getResult().replaceAllUsesWith(fused.getLogitsGrad());
  Operation *oldSeed = grad.getLossGrad().getDefiningOp();
  grad->erase();
  loss->erase();
  if (oldSeed && oldSeed->use_empty() && isa<ConstantOp>(oldSeed))
    oldSeed->erase();
  return true;
}

struct RTXFuseCrossEntropyPass
    : mlir::rtx::impl::RTXFuseCrossEntropyBase<RTXFuseCrossEntropyPass> {
  void runOnOperation() override {
    SmallVector<CrossEntropyGradOp> grads;
    getOperation().walk([&](CrossEntropyGradOp op) { grads.push_back(op); });
    DominanceInfo dom(getOperation());
    for (CrossEntropyGradOp grad : grads)
      fuse(grad, dom);
  }
};
} // namespace
