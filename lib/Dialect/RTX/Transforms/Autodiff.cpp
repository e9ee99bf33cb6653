//===- Autodiff.cpp - the rtx-autodiff pass -------------------------------===//
//
// Reverse-mode differentiation of a function whose last result is a scalar
// loss, with respect to its rtx.param values. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXAUTODIFF
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

static bool isLowPrecision(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().getIntOrFloatBitWidth() == 16 &&
         isa<FloatType>(tensor.getElementType());
}

namespace {
/// Gradients of values, accumulated as the backward pass visits their uses.
/// 16-bit float gradients are accumulated in f32 and rounded once when read.
class GradientMap {
public:
  GradientMap(OpBuilder &builder) : builder(builder) {}

  void add(Value value, Value grad, Location loc) {
    if (isLowPrecision(grad.getType()))
      grad = convert(grad, builder.getF32Type(), loc);
    auto it = sums.find(value);
    if (it == sums.end()) {
      sums[value] = grad;
      return;
    }
    it->second = AddOp::create(builder, loc, it->second, grad);
  }

  /// The gradient in the value's own type, or null.
  Value get(Value value, Location loc) {
    Value sum = getAccumulated(value);
    if (!sum || sum.getType() == value.getType())
      return sum;
    return convert(sum, cast<RankedTensorType>(value.getType()).getElementType(),
                   loc);
  }
  /// The gradient as accumulated (f32 for 16-bit values), or null.
  Value getAccumulated(Value value) const { return sums.lookup(value); }

private:
  Value convert(Value v, Type element, Location loc) {
    auto type = RankedTensorType::get(
        cast<RankedTensorType>(v.getType()).getShape(), element);
    return ConvertOp::create(builder, loc, type, v);
  }

  OpBuilder &builder;
  llvm::DenseMap<Value, Value> sums;
};

struct RTXAutodiffPass : mlir::rtx::impl::RTXAutodiffBase<RTXAutodiffPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || function.getNumResults() == 0)
      return;
    auto lossType = dyn_cast<RankedTensorType>(
        function.getResultTypes().back());
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType()))
      return;
    if (failed(differentiate(function)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp function);
};
} // namespace

LogicalResult RTXAutodiffPass::differentiate(func::FuncOp function) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperands().back();
  SmallVector<ParamOp> params(body.getOps<ParamOp>());

  // Activity analysis: differentiate only ops on a path from a parameter to
  // the loss.
  llvm::DenseSet<Value> varied, useful;
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : forward) {
    bool fromParam = isa<ParamOp>(op) ||
                     llvm::any_of(op->getOperands(), [&](Value v) {
                       return varied.contains(v);
                     });
    if (fromParam)
      for (Value result : op->getResults())
        if (isFloatTensor(result.getType()))
          varied.insert(result);
  }
  useful.insert(loss);
  for (Operation *op : llvm::reverse(forward))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op->getOperands())
        useful.insert(operand);

  OpBuilder builder(ret);
  GradientMap grads(builder);
  auto lossAttr = DenseElementsAttr::get(
      cast<RankedTensorType>(loss.getType()),
      builder.getFloatAttr(
          cast<RankedTensorType>(loss.getType()).getElementType(), 1.0));
  grads.add(loss, ConstantOp::create(builder, loss.getLoc(), lossAttr),
            loss.getLoc());

  for (Operation *op : llvm::reverse(forward)) {
    bool active = llvm::any_of(op->getResults(), [&](Value v) {
      return varied.contains(v) && useful.contains(v);
    });
    if (!active)
      continue;
    // The ops this VJP builds land before the return; they run on the
    // forward op's pipeline stage, marked as backward (rtx-pipeline).
    Operation *lastBefore = ret->getPrevNode();
    auto stage = op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName());
    llvm::scope_exit tagBackward([&] {
      if (!stage)
        return;
      Operation *first =
          lastBefore ? lastBefore->getNextNode() : &ret->getBlock()->front();
      for (Operation *built = first; built != ret;
           built = built->getNextNode()) {
        built->setAttr(RTXDialect::getStageAttrName(), stage);
        built->setAttr(RTXDialect::getBackwardAttrName(),
                       UnitAttr::get(op->getContext()));
      }
    });
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.get(result, op->getLoc()));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue;
    auto vjp = dyn_cast<VJPOpInterface>(op);
    if (!vjp)
      return op->emitError() << "'" << op->getName()
                             << "' has no VJP, but it lies between a "
                                "parameter and the loss";
    SmallVector<Value> operandGrads;
    if (failed(vjp.buildVJP(builder, resultGrads, operandGrads)))
      return op->emitError() << "could not build the VJP of '"
                             << op->getName() << "'";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && varied.contains(operand))
        grads.add(operand, grad, op->getLoc());
  }

  // The new results: the old ones, then one gradient per parameter (in f32
  // for 16-bit parameters: accumulated there, applied there).
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> resultAttrs;
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    resultAttrs.push_back(function.getResultAttrDict(i)
                              ? Attribute(function.getResultAttrDict(i))
                              : builder.getDictionaryAttr({}));
  for (ParamOp param : params) {
    Value grad = grads.getAccumulated(param.getResult());
    if (!grad) {
      auto type = isLowPrecision(param.getType())
                      ? RankedTensorType::get(param.getType().getShape(),
                                              builder.getF32Type())
                      : param.getType();
      grad = ConstantOp::create(
          builder, param.getLoc(),
          DenseElementsAttr::get(
              type, builder.getFloatAttr(type.getElementType(), 0.0)));
    }
    results.push_back(grad);
    SmallVector<NamedAttribute> attrs = {builder.getNamedAttr(
        RTXDialect::getGradOfAttrName(), param.getNameAttr())};
    if (Attribute sharding =
            param->getAttr(RTXDialect::getShardingAttrName()))
      attrs.push_back(
          builder.getNamedAttr(RTXDialect::getShardingAttrName(), sharding));
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  function.setFunctionType(builder.getFunctionType(
      function.getArgumentTypes(), ValueRange(results).getTypes()));
  function.setAllResultAttrs(resultAttrs);

  // The VJPs build every operand's gradient; drop those nobody needs.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op) && !isa<ParamOp>(op))
      op->erase();
  return success();
}
