//===- FuseResidualNorm.cpp - the rtx-fuse-residual-norm pass -------------===//
//
// rtx.add feeding rtx.layernorm / rtx.rmsnorm -> rtx.add_layernorm /
// rtx.add_rmsnorm. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "Fusion.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXFUSERESIDUALNORM
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

/// Where the fused op can stand: at the norm when the sum is used nowhere
/// before it, else at the add when the norm's parameters exist there.
Operation *placeOf(AddOp add, Operation *norm, DominanceInfo &dom) {
  if (add->getBlock() != norm->getBlock())
    return nullptr;
  if (allUsedAfter(add->getResults(), norm, {norm}, dom))
    return norm;
  SmallVector<Value> parameters(llvm::drop_begin(norm->getOperands()));
  if (allDefinedBefore(parameters, add, dom))
    return add;
  return nullptr;
}

template <typename FusedOp, typename NormOp>
bool fuse(NormOp norm, DominanceInfo &dom, ValueRange parameters) {
  auto add = norm.getInput().template getDefiningOp<AddOp>();
  if (!add)
    return false;
  Operation *place = placeOf(add, norm, dom);
  if (!place)
    return false;
  OpBuilder b(place);
  SmallVector<Value> operands = {add.getLhs(), add.getRhs()};
  operands.append(parameters.begin(), parameters.end());
  auto fused = FusedOp::create(
      b, norm.getLoc(), TypeRange{add.getType(), norm.getType()}, operands,
      ArrayRef<NamedAttribute>{
          b.getNamedAttr("epsilon", norm.getEpsilonAttr())});
  copyDiscardableAttrs(norm, fused);
  setResultShardings(fused, {add, norm});
  add.getResult().replaceAllUsesWith(fused->getResult(0));
  norm.getResult().replaceAllUsesWith(fused->getResult(1));
  norm->erase();
  add->erase();
  return true;
}

struct RTXFuseResidualNormPass
    : mlir::rtx::impl::RTXFuseResidualNormBase<RTXFuseResidualNormPass> {
  void runOnOperation() override {
    SmallVector<Operation *> norms;
    getOperation().walk([&](Operation *op) {
      if (isa<LayerNormOp, RMSNormOp>(op))
        norms.push_back(op);
    });
    DominanceInfo dom(getOperation());
    for (Operation *op : norms) {
      if (auto ln = dyn_cast<LayerNormOp>(op)) {
        SmallVector<Value> parameters = {ln.getScale()};
        if (ln.getBias())
          parameters.push_back(ln.getBias());
        fuse<AddLayerNormOp>(ln, dom, parameters);
      } else {
        auto rms = cast<RMSNormOp>(op);
        fuse<AddRMSNormOp>(rms, dom, ValueRange{rms.getScale()});
      }
    }
  }
};
} // namespace
