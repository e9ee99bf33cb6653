//===- Optimizer.cpp - the rtx-optimizer pass -----------------------------===//
//
// Turns a joint forward + backward function (from rtx-autodiff) into a whole
// training step whose parameters and optimizer state are explicit arguments
// and results. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cstdio>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXOPTIMIZER
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// One piece of state: a new function argument and the value that replaces
/// it after the step.
struct StateSlot {
  std::string key;
  Type type;
  SmallVector<NamedAttribute> argAttrs;
  Value arg;
  Value next;
};

struct RTXOptimizerPass : mlir::rtx::impl::RTXOptimizerBase<RTXOptimizerPass> {
  using RTXOptimizerBase::RTXOptimizerBase;

  void runOnOperation() override {
    if (kind != "sgd" && kind != "adamw") {
      getOperation().emitError()
          << "rtx-optimizer: unknown kind '" << kind
          << "'; expected sgd or adamw";
      return signalPassFailure();
    }
    if (failed(checkSchedule()))
      return signalPassFailure();
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && hasGradients(function) &&
          failed(buildTrainStep(function)))
        return signalPassFailure();
  }

  static bool hasGradients(func::FuncOp function) {
    for (unsigned i = 0; i < function.getNumResults(); ++i)
      if (function.getResultAttr(i, RTXDialect::getGradOfAttrName()))
        return true;
    return false;
  }

  LogicalResult buildTrainStep(func::FuncOp function);

  /// The schedule options, checked here to name the flags (the updates'
  /// verifier would name their attributes).
  LogicalResult checkSchedule() {
    bool scheduled = warmupSteps != 0 || decaySteps != 0 || minLr != 0.0;
    auto fail = [&]() {
      return getOperation().emitError() << "rtx-optimizer: ";
    };
    if (scheduled && kind == "sgd")
      return fail() << "warmup-steps, decay-steps and min-lr schedule AdamW's "
                       "learning rate; kind=sgd has no step count to "
                       "schedule by";
    if (warmupSteps < 0)
      return fail() << "warmup-steps=" << int64_t(warmupSteps)
                    << " must be >= 0";
    if (decaySteps != 0 && decaySteps <= warmupSteps)
      return fail() << "decay-steps=" << int64_t(decaySteps)
                    << " must be 0 (no decay) or greater than warmup-steps="
                    << int64_t(warmupSteps);
    if (!(minLr >= 0.0 && minLr <= lr))
      return fail() << "min-lr=" << asWritten(minLr)
                    << " must be in [0, lr=" << asWritten(lr) << "]";
    if (minLr != 0.0 && decaySteps == 0)
      return fail() << "min-lr=" << asWritten(minLr)
                    << " needs decay-steps (the step it is reached at)";
    return success();
  }

  /// A number as an option is usually written (0.001, not 1.000000e-03).
  static std::string asWritten(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
  }
};
} // namespace

static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

LogicalResult RTXOptimizerPass::buildTrainStep(func::FuncOp function) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *ctx = function.getContext();
  OpBuilder b(ctx);
  Location loc = function.getLoc();
  Type f32 = b.getF32Type();

  // Gradients by parameter name; the other results stay (the loss is the
  // last of them).
  llvm::StringMap<Value> gradOf;
  SmallVector<Value> keptResults;
  SmallVector<DictionaryAttr> keptAttrs;
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    if (auto name = function.getResultAttrOfType<StringAttr>(
            i, RTXDialect::getGradOfAttrName())) {
      gradOf[name.getValue()] = ret.getOperand(i);
      continue;
    }
    keptResults.push_back(ret.getOperand(i));
    keptAttrs.push_back(function.getResultAttrDict(i));
  }

  SmallVector<ParamOp> params(body.getOps<ParamOp>());
  SmallVector<StateSlot> slots;
  b.setInsertionPointToStart(&body);
  for (ParamOp param : params) {
    StringRef name = param.getName();
    Value grad = gradOf.lookup(name);
    if (!grad)
      return param.emitError() << "parameter \"" << name
                               << "\" has no gradient: run rtx-autodiff first";
    auto paramType = param.getType();
    bool master = mixedPrecision && paramType.getElementType() != f32;
    auto argType =
        master ? RankedTensorType::get(paramType.getShape(), f32) : paramType;
    StateSlot slot;
    slot.key = ("param:" + name).str();
    slot.type = argType;
    slot.argAttrs = {
        b.getNamedAttr(RTXDialect::getParamAttrName(), param.getNameAttr()),
        b.getNamedAttr(RTXDialect::getInitAttrName(), param.getInitAttr())};
    if (param.getSeedAttr())
      slot.argAttrs.push_back(
          b.getNamedAttr(RTXDialect::getSeedAttrName(), param.getSeedAttr()));
    if (Attribute sharding = param->getAttr(RTXDialect::getShardingAttrName()))
      slot.argAttrs.push_back(
          b.getNamedAttr(RTXDialect::getShardingAttrName(), sharding));
    if (Attribute part = param->getAttr(RTXDialect::getPartOfAttrName()))
      slot.argAttrs.push_back(
          b.getNamedAttr(RTXDialect::getPartOfAttrName(), part));
    slots.push_back(slot);
  }

  // The state arguments: parameters first, then the optimizer's state.
  SmallVector<StateSlot> moments;
  StateSlot step;
  if (kind == "adamw") {
    for (auto [slot, param] : llvm::zip(slots, params)) {
      Type gradType = gradOf.lookup(param.getName()).getType();
      for (StringRef moment : {"exp_avg", "exp_avg_sq"}) {
        StateSlot state;
        state.key = (moment + ":" + param.getName()).str();
        state.type = gradType;
        for (const NamedAttribute &attr : slot.argAttrs)
          if (attr.getName() == RTXDialect::getShardingAttrName())
            state.argAttrs.push_back(attr);
        moments.push_back(state);
      }
    }
    step.key = "step";
    step.type = RankedTensorType::get({}, f32);
  }
  // Inserted at once: inserting them one by one rebuilds the function's
  // argument attributes each time, quadratic in the number of parameters.
  SmallVector<StateSlot *> all;
  for (StateSlot &slot : slots)
    all.push_back(&slot);
  for (StateSlot &slot : moments)
    all.push_back(&slot);
  if (kind == "adamw")
    all.push_back(&step);
  SmallVector<unsigned> indices(all.size(), 0);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs(all.size(), loc);
  for (StateSlot *slot : all) {
    slot->argAttrs.push_back(b.getNamedAttr(RTXDialect::getStateAttrName(),
                                            b.getStringAttr(slot->key)));
    types.push_back(slot->type);
    attrs.push_back(b.getDictionaryAttr(slot->argAttrs));
  }
  if (failed(function.insertArguments(indices, types, attrs, locs)))
    return failure();
  for (auto [i, slot] : llvm::enumerate(all))
    slot->arg = body.getArgument(i);
  for (auto [slot, param] : llvm::zip(slots, params)) {
    Value replacement = slot.arg;
    if (slot.type != param.getType())
      replacement = ConvertOp::create(b, param.getLoc(), param.getType(),
                                      slot.arg);
    param.replaceAllUsesWith(replacement);
  }
  for (ParamOp param : params)
    param.erase();

  // The update, before the return.
  b.setInsertionPoint(ret);
  SmallVector<Value> paramGrads;
  for (StateSlot &slot : slots)
    paramGrads.push_back(gradOf.lookup(slot.key.substr(6)));
  if (clipNorm > 0) {
    // scale = min(1, clip / (||g|| + 1e-6)) over all gradients together.
    auto scalar = RankedTensorType::get({}, f32);
    Value total = splat(b, loc, scalar, 0.0);
    for (Value grad : paramGrads) {
      auto type = cast<RankedTensorType>(grad.getType());
      Value g = grad;
      if (type.getElementType() != f32)
        g = ConvertOp::create(b, loc,
                              RankedTensorType::get(type.getShape(), f32), g);
      Value squares = MulOp::create(b, loc, g, g);
      SmallVector<int64_t> all =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      Value sum = ReduceOp::create(b, loc, scalar, ReductionKind::Sum, squares,
                                   b.getDenseI64ArrayAttr(all), false);
      total = AddOp::create(b, loc, total, sum);
    }
    auto sqrt = SqrtOp::create(b, loc, total);
    // rtx-shard-state finds the norm by it, to sum it from gradient shards.
    sqrt->setAttr(RTXDialect::getGradNormAttrName(), b.getUnitAttr());
    Value norm = sqrt;
    Value denominator =
        AddOp::create(b, loc, norm, splat(b, loc, scalar, 1e-6));
    Value ratio = DivOp::create(b, loc, splat(b, loc, scalar, clipNorm),
                                denominator);
    Value scale = MinimumOp::create(b, loc, ratio, splat(b, loc, scalar, 1.0));
    for (Value &grad : paramGrads) {
      auto type = cast<RankedTensorType>(grad.getType());
      Value s = scale;
      if (type.getElementType() != f32)
        s = ConvertOp::create(
            b, loc, RankedTensorType::get({}, type.getElementType()), s);
      Value expanded = BroadcastOp::create(b, loc, type, s,
                                           b.getDenseI64ArrayAttr({}));
      grad = MulOp::create(b, loc, grad, expanded);
    }
  }
  Value stepNext;
  if (kind == "adamw")
    stepNext = AddOp::create(b, loc, step.arg,
                             splat(b, loc, cast<RankedTensorType>(step.type),
                                   1.0));
  for (auto [i, slot] : llvm::enumerate(slots)) {
    Value grad = paramGrads[i];
    if (kind == "sgd") {
      slot.next = SGDUpdateOp::create(b, loc, slot.arg, grad,
                                      b.getF64FloatAttr(lr),
                                      b.getF64FloatAttr(weightDecay));
      continue;
    }
    auto update = AdamWUpdateOp::create(
        b, loc, slot.arg, grad, moments[2 * i].arg, moments[2 * i + 1].arg,
        stepNext, b.getF64FloatAttr(lr), b.getF64FloatAttr(beta1),
        b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
        b.getF64FloatAttr(weightDecay), b.getI64IntegerAttr(warmupSteps),
        b.getI64IntegerAttr(decaySteps), b.getF64FloatAttr(minLr));
    slot.next = update.getNewParam();
    moments[2 * i].next = update.getNewExpAvg();
    moments[2 * i + 1].next = update.getNewExpAvgSq();
  }
  step.next = stepNext;

  // Results: what the function returned (the loss last), then the state.
  SmallVector<Value> results(keptResults);
  SmallVector<Attribute> resultAttrs;
  for (DictionaryAttr attrs : keptAttrs)
    resultAttrs.push_back(attrs ? attrs : b.getDictionaryAttr({}));
  auto addResult = [&](const StateSlot &slot) {
    results.push_back(slot.next);
    SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
        RTXDialect::getStateAttrName(), b.getStringAttr(slot.key))};
    for (const NamedAttribute &attr : slot.argAttrs)
      if (attr.getName() == RTXDialect::getShardingAttrName())
        attrs.push_back(attr);
    resultAttrs.push_back(b.getDictionaryAttr(attrs));
  };
  for (const StateSlot &slot : slots)
    addResult(slot);
  for (const StateSlot &slot : moments)
    addResult(slot);
  if (kind == "adamw")
    addResult(step);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  function.setFunctionType(b.getFunctionType(function.getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  function.setAllResultAttrs(resultAttrs);
  function->setAttr(RTXDialect::getTrainStepAttrName(), b.getUnitAttr());
  return success();
}
