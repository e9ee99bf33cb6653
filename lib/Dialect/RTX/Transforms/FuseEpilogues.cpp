//===- FuseEpilogues.cpp - the rtx-fuse-epilogues pass --------------------===//
//
// Rewrites GEMMs and the elementwise ops or reductions after them into
// rtx.gemm_epilogue (bias + GELU, bias gradient, GELU gradient). See
// Passes.td. Each rewrite checks the whole group before touching the IR,
// and places the fused op where all its operands are defined and before
// every use of the values it replaces.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXFUSEEPILOGUES
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

UnaryFn geluFn(GeluOp gelu) {
  return gelu.getApproximate() ? UnaryFn::GeluTanh : UnaryFn::Gelu;
}

/// The sharding recorded for `v` (a `#rtx.sharding`), or null.
Attribute recordedSharding(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return nullptr;
  Attribute attr = op->getAttr(RTXDialect::getShardingAttrName());
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    return array[cast<OpResult>(v).getResultNumber()];
  return attr;
}

/// Records on `fused` the shardings of the values its results replace
/// (`replaced[i]` for result i), when each has one: a partitioned program
/// keeps saying how every value is distributed.
void moveShardings(Operation *fused, ArrayRef<Value> replaced) {
  SmallVector<Attribute> shardings;
  for (Value v : replaced)
    if (Attribute sharding = recordedSharding(v))
      shardings.push_back(sharding);
  if (shardings.empty() || shardings.size() != replaced.size())
    return;
  Attribute attr = shardings.size() == 1
                       ? shardings.front()
                       : ArrayAttr::get(fused->getContext(), shardings);
  fused->setAttr(RTXDialect::getShardingAttrName(), attr);
}

/// Reshapes `v` to `type` unless it has that type already (a view).
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

//===----------------------------------------------------------------------===//
// Forward: gelu(linear(x, W, b)) -> bias_gelu[_tanh][_aux]
//===----------------------------------------------------------------------===//

/// Fuses `gelu` with the linear that produces its input, when the linear
/// has a bias and its result is read only by the GELU and by the backward
/// pass's gradient of the same GELU form (which then reads the fused op's
/// pre-activation).
bool fuseBiasGelu(GeluOp gelu) {
  auto linear = gelu.getInput().getDefiningOp<LinearOp>();
  if (!linear || !linear.getBias() || linear->getBlock() != gelu->getBlock())
    return false;
  Value pre = linear.getResult();
  bool readByBackward = false;
  for (Operation *user : pre.getUsers()) {
    if (user == gelu)
      continue;
    auto grad = dyn_cast<UnaryGradOp>(user);
    if (!grad || grad.getFn() != geluFn(gelu) || grad.getInput() != pre)
      return false;
    readByBackward = true;
  }
  bool tanh = gelu.getApproximate();
  GemmEpilogue epilogue =
      readByBackward
          ? (tanh ? GemmEpilogue::BiasGeluTanhAux : GemmEpilogue::BiasGeluAux)
          : (tanh ? GemmEpilogue::BiasGeluTanh : GemmEpilogue::BiasGelu);
  OpBuilder b(linear);
  auto fused = GemmEpilogueOp::create(
      b, linear.getLoc(), gelu.getType(),
      readByBackward ? pre.getType() : Type(), epilogue, linear.getInput(),
      linear.getWeight(), linear.getBias(), Value(),
      /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  if (readByBackward) {
    moveShardings(fused, {gelu.getResult(), pre});
    pre.replaceAllUsesWith(fused.getAux());
  } else {
    moveShardings(fused, {gelu.getResult()});
  }
  gelu.getResult().replaceAllUsesWith(fused.getResult());
  gelu->erase();
  linear->erase();
  return true;
}

//===----------------------------------------------------------------------===//
// Backward through the GELU: unary_grad(gelu, pre, matmul(dY, W)) -> dgelu
//===----------------------------------------------------------------------===//

/// The matmul whose product `v` is (directly or through one reshape), when
/// that product has no other reader than `user`.
MatmulOp productOnlyReadBy(Value v, Operation *user) {
  if (!v.hasOneUse())
    return nullptr;
  if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    if (reshape->getBlock() != user->getBlock())
      return nullptr;
    v = reshape.getInput();
    user = reshape;
    if (!v.hasOneUse())
      return nullptr;
  }
  auto matmul = v.getDefiningOp<MatmulOp>();
  if (!matmul || matmul->getBlock() != user->getBlock())
    return nullptr;
  return matmul;
}

bool fuseDGelu(UnaryGradOp grad) {
  if (grad.getFn() != UnaryFn::Gelu && grad.getFn() != UnaryFn::GeluTanh)
    return false;
  MatmulOp matmul = productOnlyReadBy(grad.getResultGrad(), grad);
  if (!matmul)
    return false;
  RankedTensorType productType = tensorOf(matmul.getResult());
  if (tensorOf(grad.getInput()).getNumElements() !=
      productType.getNumElements())
    return false;
  // At the gradient: the pre-activation and the matmul's operands are
  // defined there.
  OpBuilder b(grad);
  Location loc = grad.getLoc();
  Value pre = reshapeTo(b, loc, grad.getInput(), productType);
  auto fused = GemmEpilogueOp::create(
      b, loc, productType, Type(),
      grad.getFn() == UnaryFn::GeluTanh ? GemmEpilogue::DGeluTanh
                                        : GemmEpilogue::DGelu,
      matmul.getLhs(), matmul.getRhs(), Value(), pre, matmul.getTransposeLhs(),
      matmul.getTransposeRhs());
  moveShardings(fused, {matmul.getResult()});
  Value result = reshapeTo(b, loc, fused.getResult(), grad.getType());
  if (result != fused.getResult())
    if (Attribute sharding = recordedSharding(grad.getResult()))
      result.getDefiningOp()->setAttr(RTXDialect::getShardingAttrName(),
                                      sharding);
  grad.getResult().replaceAllUsesWith(result);
  Operation *reshape = grad.getResultGrad().getDefiningOp<ReshapeOp>();
  grad->erase();
  if (reshape)
    reshape->erase();
  matmul->erase();
  return true;
}

//===----------------------------------------------------------------------===//
// Backward, weight and bias gradients: matmul(dY^T, X) + reduce sum dY
//===----------------------------------------------------------------------===//

/// The dimension of a matmul's stored lhs that it contracts.
int64_t lhsContractingDim(MatmulOp matmul) {
  return matmul.getTransposeLhs() ? 0 : 1;
}

/// A matmul of this block reading `sum`'s input as its lhs and contracting
/// exactly the dimension `sum` reduces; the first in block order.
MatmulOp weightGradientOf(ReduceOp sum) {
  if (sum.getKind() != ReductionKind::Sum || sum.getKeepdim() ||
      sum.getDims().size() != 1 || tensorOf(sum.getInput()).getRank() != 2)
    return nullptr;
  MatmulOp found;
  for (Operation *user : sum.getInput().getUsers()) {
    auto matmul = dyn_cast<MatmulOp>(user);
    if (!matmul || matmul.getLhs() != sum.getInput() ||
        matmul->getBlock() != sum->getBlock() ||
        lhsContractingDim(matmul) != sum.getDims()[0])
      continue;
    if (!found || matmul->isBeforeInBlock(found))
      found = matmul;
  }
  return found;
}

bool fuseBiasGrad(ReduceOp sum, DominanceInfo &dominance) {
  MatmulOp matmul = weightGradientOf(sum);
  if (!matmul)
    return false;
  // At the earlier of the two, where every operand must be defined already
  // (the sum's operand is the matmul's lhs; the rhs may come later).
  Operation *at =
      matmul->isBeforeInBlock(sum) ? matmul.getOperation() : sum.getOperation();
  if (!dominance.properlyDominates(matmul.getRhs(), at))
    return false;
  OpBuilder b(at);
  auto fused = GemmEpilogueOp::create(
      b, matmul.getLoc(), matmul.getType(), sum.getType(),
      GemmEpilogue::BiasGrad, matmul.getLhs(), matmul.getRhs(), Value(),
      Value(), matmul.getTransposeLhs(), matmul.getTransposeRhs());
  moveShardings(fused, {matmul.getResult(), sum.getResult()});
  matmul.getResult().replaceAllUsesWith(fused.getResult());
  sum.getResult().replaceAllUsesWith(fused.getAux());
  matmul->erase();
  sum->erase();
  return true;
}

struct RTXFuseEpiloguesPass
    : mlir::rtx::impl::RTXFuseEpiloguesBase<RTXFuseEpiloguesPass> {
  using RTXFuseEpiloguesBase::RTXFuseEpiloguesBase;

  void runOnOperation() override {
    // The forward fusions first: the backward's GELU gradient then reads
    // the fused op's pre-activation, which the dgelu fusion accepts.
    SmallVector<GeluOp> gelus;
    getOperation().walk([&](GeluOp op) { gelus.push_back(op); });
    for (GeluOp gelu : gelus)
      fuseBiasGelu(gelu);

    SmallVector<UnaryGradOp> grads;
    getOperation().walk([&](UnaryGradOp op) { grads.push_back(op); });
    for (UnaryGradOp grad : grads)
      fuseDGelu(grad);

    DominanceInfo dominance(getOperation());
    SmallVector<ReduceOp> sums;
    getOperation().walk([&](ReduceOp op) { sums.push_back(op); });
    for (ReduceOp sum : sums)
      fuseBiasGrad(sum, dominance);
  }
};

} // namespace
