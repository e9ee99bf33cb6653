//===- FuseAdamW.cpp - the rtx-fuse-adamw pass ----------------------------===//
//
// The rtx.adamw_update ops of a step -> rtx.multi_adamw_update; the sum of
// the gradients' squares of a clipped optimizer -> rtx.sum_squares. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "Fusion.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXFUSEADAMW
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Updates that one multi-tensor update may run together: one step, one set
/// of hyper-parameters and learning-rate schedule, one parameter and one
/// moment element type.
bool sameGroup(AdamWUpdateOp a, AdamWUpdateOp b) {
  return a->getBlock() == b->getBlock() && a.getStep() == b.getStep() &&
         a.getLrAttr() == b.getLrAttr() &&
         a.getBeta1Attr() == b.getBeta1Attr() &&
         a.getBeta2Attr() == b.getBeta2Attr() &&
         a.getEpsAttr() == b.getEpsAttr() &&
         a.getWeightDecayAttr() == b.getWeightDecayAttr() &&
         a.getWarmupSteps() == b.getWarmupSteps() &&
         a.getDecaySteps() == b.getDecaySteps() &&
         a.getMinLr().bitwiseIsEqual(b.getMinLr()) &&
         elementOf(a.getParam()) == elementOf(b.getParam()) &&
         elementOf(a.getGrad()) == elementOf(b.getGrad());
}

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() *
         static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
}

/// Groups in program order: an update joins the first group it matches
/// whose first update its operands are all defined before (the fused op
/// stands there) and whose parameters stay within `bucketBytes` (0: no
/// limit) with it.
SmallVector<SmallVector<AdamWUpdateOp>>
groupUpdates(func::FuncOp function, DominanceInfo &dom, int64_t bucketBytes) {
  SmallVector<SmallVector<AdamWUpdateOp>> groups;
  SmallVector<int64_t> groupBytes;
  function.walk([&](AdamWUpdateOp op) {
    int64_t bytes = bytesOf(op.getParam());
    for (auto [group, total] : llvm::zip(groups, groupBytes))
      if (sameGroup(group.front(), op) &&
          (bucketBytes <= 0 || total + bytes <= bucketBytes) &&
          allDefinedBefore(op->getOperands(), group.front(), dom)) {
        group.push_back(op);
        total += bytes;
        return;
      }
    groups.push_back({op});
    groupBytes.push_back(bytes);
  });
  return groups;
}

void fuseUpdates(ArrayRef<AdamWUpdateOp> group) {
  AdamWUpdateOp first = group.front();
  SmallVector<Value> params, grads, expAvgs, expAvgSqs;
  SmallVector<Type> paramTypes, momentTypes;
  for (AdamWUpdateOp op : group) {
    params.push_back(op.getParam());
    grads.push_back(op.getGrad());
    expAvgs.push_back(op.getExpAvg());
    expAvgSqs.push_back(op.getExpAvgSq());
    paramTypes.push_back(op.getNewParam().getType());
    momentTypes.push_back(op.getNewExpAvg().getType());
  }
  OpBuilder b(first);
  auto fused = MultiAdamWUpdateOp::create(
      b, first.getLoc(), paramTypes, momentTypes, momentTypes, params, grads,
      expAvgs, expAvgSqs, first.getStep(), first.getLrAttr(),
      first.getBeta1Attr(), first.getBeta2Attr(), first.getEpsAttr(),
      first.getWeightDecayAttr(), first.getWarmupStepsAttr(),
      first.getDecayStepsAttr(), first.getMinLrAttr());
  copyDiscardableAttrs(first, fused);
  for (auto [i, constOp] : llvm::enumerate(group)) {
    AdamWUpdateOp op = constOp;
    op.getNewParam().replaceAllUsesWith(fused.getNewParams()[i]);
    op.getNewExpAvg().replaceAllUsesWith(fused.getNewExpAvgs()[i]);
    op.getNewExpAvgSq().replaceAllUsesWith(fused.getNewExpAvgSqs()[i]);
    op->erase();
  }
}

/// `reduce sum` over every dimension, without keepdim, to an f32 scalar.
bool isTotalSum(ReduceOp reduce) {
  auto type = cast<RankedTensorType>(reduce.getInput().getType());
  return reduce.getKind() == ReductionKind::Sum && !reduce.getKeepdim() &&
         llvm::equal(reduce.getDims(), llvm::seq<int64_t>(0, type.getRank())) &&
         reduce.getType().getElementType().isF32();
}

/// If `term` is reduce_sum(mul(g32, g32)) with g32 = g or convert(g) to f32,
/// whose intermediate values have no other use: g.
Value squaredGradient(Value term) {
  auto reduce = term.getDefiningOp<ReduceOp>();
  if (!reduce || !reduce->hasOneUse() || !isTotalSum(reduce))
    return nullptr;
  auto mul = reduce.getInput().getDefiningOp<MulOp>();
  if (!mul || !mul->hasOneUse() || mul.getLhs() != mul.getRhs() ||
      !elementOf(mul.getLhs()).isF32())
    return nullptr;
  Value g = mul.getLhs();
  if (auto convert = g.getDefiningOp<ConvertOp>())
    if (!elementOf(convert.getInput()).isF64() &&
        llvm::all_of(convert->getUsers(),
                     [&](Operation *user) { return user == mul; }))
      return convert.getInput();
  return g;
}

/// A constant scalar 0.0.
bool isZeroSplat(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto values = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  return values && values.isSplat() && values.getSplatValue<APFloat>().isZero();
}

/// The clipped optimizer's total = 0 + s_1 + ... + s_n below `root` (the
/// value whose square root is the gradient norm): the gradients of the
/// s_i, in order, and the last add; false when `root` is not that chain.
bool matchSumOfSquares(Value root, SmallVectorImpl<Value> &gradients,
                       AddOp &last) {
  Value total = root;
  SmallVector<Value> reversed;
  last = total.getDefiningOp<AddOp>();
  while (auto add = total.getDefiningOp<AddOp>()) {
    Value g = squaredGradient(add.getRhs());
    if (!g || (add != last && !add->hasOneUse()))
      return false;
    reversed.push_back(g);
    total = add.getLhs();
  }
  if (!isZeroSplat(total) || reversed.empty())
    return false;
  gradients.assign(reversed.rbegin(), reversed.rend());
  return true;
}

/// Replaces the chain under the gradient norm (an `rtx.grad_norm` sqrt,
/// directly or through the collective that sums it over gradient shards).
void fuseSumOfSquares(SqrtOp sqrt) {
  Value root = sqrt.getInput();
  if (auto reduce = root.getDefiningOp<AllReduceOp>())
    root = reduce.getInput();
  SmallVector<Value> gradients;
  AddOp last;
  if (!matchSumOfSquares(root, gradients, last))
    return;
  OpBuilder b(last);
  auto fused =
      SumSquaresOp::create(b, last.getLoc(), last.getType(), gradients);
  copyDiscardableAttrs(last, fused);
  if (Attribute sharding = last->getAttr(RTXDialect::getShardingAttrName()))
    fused->setAttr(RTXDialect::getShardingAttrName(), sharding);
  // The chain, from the last add down, now without users.
  // Each op is erased once its users are; a converted gradient that the
  // update also reads (mixed precision's f32 gradient) stays.
  Value total = last.getResult();
  last.getResult().replaceAllUsesWith(fused.getResult());
  while (auto add = total.getDefiningOp<AddOp>()) {
    auto reduce = add.getRhs().getDefiningOp<ReduceOp>();
    auto mul = reduce.getInput().getDefiningOp<MulOp>();
    Operation *convert = mul.getLhs().getDefiningOp<ConvertOp>();
    total = add.getLhs();
    add->erase();
    reduce->erase();
    mul->erase();
    if (convert && convert->use_empty())
      convert->erase();
  }
  if (Operation *zero = total.getDefiningOp())
    if (zero->use_empty())
      zero->erase();
}

struct RTXFuseAdamWPass : mlir::rtx::impl::RTXFuseAdamWBase<RTXFuseAdamWPass> {
  using RTXFuseAdamWBase::RTXFuseAdamWBase;

  void runOnOperation() override {
    SmallVector<SqrtOp> norms;
    getOperation().walk([&](SqrtOp op) {
      if (op->hasAttr(RTXDialect::getGradNormAttrName()))
        norms.push_back(op);
    });
    for (SqrtOp sqrt : norms)
      fuseSumOfSquares(sqrt);
    DominanceInfo dom(getOperation());
    for (ArrayRef<AdamWUpdateOp> group :
         groupUpdates(getOperation(), dom, bucketBytes))
      if (group.size() > 1)
        fuseUpdates(group);
  }
};
} // namespace
