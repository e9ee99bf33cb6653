//===- Partition.cpp - the rtx-partition pass -----------------------------===//
//
// Rewrites a fully sharded global program into the per-rank program, with
// the collectives its shardings imply. See Passes.td. The per-op rules are
// the default rule below and the overrides of PartitionRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "FactorAssignment.h"
#include "Partitioner.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPARTITION
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

Layout Partitioner::declared(Value global) {
  auto type = cast<RankedTensorType>(global.getType());
  if (auto arg = dyn_cast<BlockArgument>(global)) {
    if (auto attr = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), RTXDialect::getShardingAttrName()))
      return Layout::fromAttr(attr);
    return Layout::replicated(type.getRank());
  }
  Operation *op = global.getDefiningOp();
  Attribute attr = op->getAttr(RTXDialect::getShardingAttrName());
  if (auto sharding = dyn_cast_or_null<ShardingAttr>(attr))
    return Layout::fromAttr(sharding);
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    return Layout::fromAttr(
        cast<ShardingAttr>(array[cast<OpResult>(global).getResultNumber()]));
  return Layout::replicated(type.getRank());
}

RankedTensorType Partitioner::localType(RankedTensorType global,
                                        const Layout &layout) {
  return RankedTensorType::get(localShape(global.getShape(), layout, mesh),
                               global.getElementType());
}

void Partitioner::annotate(Operation *op, ArrayRef<Layout> layouts) {
  if (layouts.size() == 1) {
    op->setAttr(RTXDialect::getShardingAttrName(),
                layouts[0].toAttr(ctx, mesh.name()));
    return;
  }
  SmallVector<Attribute> attrs;
  for (const Layout &layout : layouts)
    attrs.push_back(layout.toAttr(ctx, mesh.name()));
  op->setAttr(RTXDialect::getShardingAttrName(), ArrayAttr::get(ctx, attrs));
}

ArrayAttr Partitioner::axesAttr(ArrayRef<std::string> axes) {
  SmallVector<StringRef> refs(axes.begin(), axes.end());
  return builder.getStrArrayAttr(refs);
}

Value Partitioner::track(Operation *op, const Layout &layout) {
  annotate(op, {layout});
  actual[op->getResult(0)] = layout;
  return op->getResult(0);
}

bool Partitioner::isParameter(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return static_cast<bool>(function.getArgAttr(
        arg.getArgNumber(), RTXDialect::getParamAttrName()));
  return isa_and_nonnull<ParamOp>(v.getDefiningOp());
}

/// Moves `local` from its current layout to `to` with the cheapest
/// collectives: reduce partial sums (as a reduce-scatter when the target
/// splits a dimension over the same axes), gather dimensions whose axes must
/// go, slice dimensions that gain axes.
Value Partitioner::reshard(Value local, const Layout &to, Location loc) {
  Layout cur = actual.lookup(local);
  if (cur == to)
    return local;
  auto key = std::make_pair(local.getAsOpaquePointer(), to.str());
  if (auto it = reshardCache.find(key); it != reshardCache.end())
    return it->second;
  StringRef meshRef = mesh.name();
  Value v = local;
  auto typeOf = [](Value x) { return cast<RankedTensorType>(x.getType()); };
  auto withDim = [&](Value x, int64_t d, int64_t size) {
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape[d] = size;
    return RankedTensorType::get(shape, typeOf(x).getElementType());
  };
  auto finish = [&](Operation *op) {
    annotate(op, {cur});
    v = op->getResult(0);
    actual[v] = cur;
  };

  // 1. Partial sums the target does not keep.
  SmallVector<std::string, 2> reduce;
  for (const std::string &axis : cur.partial)
    if (!llvm::is_contained(to.partial, axis))
      reduce.push_back(axis);
  if (!reduce.empty()) {
    // A dimension the target splits over exactly these axes, unsplit now:
    // reduce-scatter into it.
    int64_t scatterDim = -1;
    for (size_t d = 0; d < to.dims.size(); ++d)
      if (cur.dims[d].empty() &&
          SmallVector<std::string, 2>(to.dims[d].begin(), to.dims[d].end()) ==
              reduce &&
          typeOf(v).getDimSize(d) % mesh.product(reduce) == 0)
        scatterDim = d;
    llvm::erase_if(cur.partial, [&](const std::string &a) {
      return llvm::is_contained(reduce, a);
    });
    if (scatterDim >= 0) {
      cur.dims[scatterDim] = to.dims[scatterDim];
      auto type =
          withDim(v, scatterDim,
                  typeOf(v).getDimSize(scatterDim) / mesh.product(reduce));
      finish(ReduceScatterOp::create(builder, loc, type, v, meshRef,
                                     axesAttr(reduce), ReductionKind::Sum,
                                     static_cast<uint64_t>(scatterDim)));
    } else {
      finish(AllReduceOp::create(builder, loc, v.getType(), v, meshRef,
                                 axesAttr(reduce), ReductionKind::Sum));
    }
  }
  // 2. An axis that moves from one dimension to another: one all-to-all
  //    (DeepSpeed-Ulysses' sequence <-> heads exchange) instead of a gather
  //    and a slice.
  for (size_t from = 0; from < cur.dims.size(); ++from) {
    auto &axes = cur.dims[from];
    if (axes.empty() || !to.dims[from].empty())
      continue;
    for (size_t into = 0; into < cur.dims.size(); ++into) {
      if (into == from || !cur.dims[into].empty() ||
          SmallVector<std::string, 2>(to.dims[into].begin(),
                                      to.dims[into].end()) != axes ||
          typeOf(v).getDimSize(into) % mesh.product(axes) != 0)
        continue;
      SmallVector<std::string, 2> moved = axes;
      int64_t n = mesh.product(moved);
      SmallVector<int64_t> shape(typeOf(v).getShape());
      shape[into] /= n;
      shape[from] *= n;
      auto type = RankedTensorType::get(shape, typeOf(v).getElementType());
      cur.dims[into] = moved;
      axes.clear();
      finish(AllToAllOp::create(builder, loc, type, v, meshRef, axesAttr(moved),
                                static_cast<uint64_t>(into),
                                static_cast<uint64_t>(from)));
      break;
    }
  }
  // 3. Gather the axes a dimension must lose (those after the common
  //    prefix, so the kept axes stay a block split).
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    auto &axes = cur.dims[d];
    size_t prefix = 0;
    while (prefix < axes.size() && prefix < to.dims[d].size() &&
           axes[prefix] == to.dims[d][prefix])
      ++prefix;
    if (prefix == axes.size())
      continue;
    SmallVector<std::string, 2> gathered(axes.begin() + prefix, axes.end());
    axes.resize(prefix);
    auto type = withDim(v, d, typeOf(v).getDimSize(d) * mesh.product(gathered));
    finish(AllGatherOp::create(builder, loc, type, v, meshRef,
                               axesAttr(gathered), static_cast<uint64_t>(d)));
  }
  // 4. Slice the axes a dimension must gain.
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    auto &axes = cur.dims[d];
    if (axes.size() == to.dims[d].size())
      continue;
    SmallVector<std::string, 2> added(to.dims[d].begin() + axes.size(),
                                      to.dims[d].end());
    axes.assign(to.dims[d].begin(), to.dims[d].end());
    auto type = withDim(v, d, typeOf(v).getDimSize(d) / mesh.product(added));
    finish(MeshSliceOp::create(builder, loc, type, v, meshRef, axesAttr(added),
                               static_cast<uint64_t>(d)));
  }
  reshardCache[key] = v;
  return v;
}

/// Params, inputs and constants: their local block, with no communication.
LogicalResult Partitioner::partitionSource(Operation *op) {
  Value global = op->getResult(0);
  Layout layout = declared(global);
  auto globalType = cast<RankedTensorType>(global.getType());
  auto type = localType(globalType, layout);
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto value = cast<DenseElementsAttr>(constant.getValue());
    if (value.isSplat()) {
      auto local = ConstantOp::create(
          builder, op->getLoc(),
          DenseElementsAttr::get(type, value.getSplatValue<Attribute>()));
      annotate(local, {layout});
      localOf[global] = local;
      actual[local] = layout;
      return success();
    }
    // A non-uniform constant is materialised whole and sliced.
    Operation *whole = builder.clone(*op);
    whole->removeAttr(RTXDialect::getShardingAttrName());
    actual[whole->getResult(0)] = Layout::replicated(globalType.getRank());
    localOf[global] = reshard(whole->getResult(0), layout, op->getLoc());
    return success();
  }
  Operation *local = builder.clone(*op);
  local->getResult(0).setType(type);
  annotate(local, {layout});
  localOf[global] = local->getResult(0);
  actual[local->getResult(0)] = layout;
  return success();
}

void Partitioner::setResult(Operation *op, Value result, const Layout &layout,
                            int64_t meanShards) {
  actual[result] = layout;
  if (meanShards <= 1) {
    localOf[op->getResult(0)] = result;
    return;
  }
  auto type = cast<RankedTensorType>(result.getType());
  auto scale = ConstantOp::create(
      builder, op->getLoc(),
      DenseElementsAttr::get(
          type, builder.getFloatAttr(type.getElementType(),
                                     1.0 / static_cast<double>(meanShards))));
  // A splat is the same on every rank: give it the result's split.
  Layout scaleLayout = layout;
  scaleLayout.partial.clear();
  annotate(scale, {scaleLayout});
  actual[scale] = scaleLayout;
  auto scaled = MulOp::create(builder, op->getLoc(), result, scale);
  annotate(scaled, {layout});
  localOf[op->getResult(0)] = scaled;
  actual[scaled] = layout;
}

//===----------------------------------------------------------------------===//
// The default rule
//===----------------------------------------------------------------------===//

void Partitioner::assignFactors(const llvm::StringSet<> &reserved) {
  Operation *op = current;
  // Parameters' layouts are deliberate (Megatron's column/row splits), so
  // they claim their axes first; then the results; then other operands.
  std::vector<FactorCandidate> candidates;
  for (auto [operand, dims] :
       llvm::zip(op->getOperands(), rule->operandFactors))
    if (isParameter(operand))
      candidates.push_back({dims, declared(operand)});
  for (auto [result, dims] : llvm::zip(op->getResults(), rule->resultFactors))
    candidates.push_back({dims, declared(result)});
  for (auto [operand, dims] :
       llvm::zip(op->getOperands(), rule->operandFactors))
    candidates.push_back({dims, declared(operand)});
  usedAxes.clear();
  factorAxes = assignFactorAxes(
      *rule, candidates, reserved,
      [&](ArrayRef<std::string> axes) { return mesh.product(axes); }, usedAxes);
}

Layout Partitioner::project(const OpShardingRule::ValueFactors &dims) const {
  Layout layout = Layout::replicated(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    if (!dims[d].empty())
      layout.dims[d].assign(factorAxes[dims[d].front()].begin(),
                            factorAxes[dims[d].front()].end());
  return layout;
}

FailureOr<SmallVector<Value>> Partitioner::localOperands(Operation *op) {
  // Ops that pass partial sums through (additions, data movement) take
  // them as they are.
  bool linear = op->hasTrait<PassesPartialSums>();
  SmallVector<std::string, 2> passedPartial;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    Value local = localOf.lookup(operand);
    if (!local)
      return op->emitError() << "operand " << i << " was not partitioned";
    if (!linear)
      continue;
    // Keep partial sums over axes the required layouts do not split, and
    // only those every operand holds: a whole value added to partial sums
    // would be counted once per rank.
    Layout required = project(rule->operandFactors[i]);
    const Layout &have = actual.lookup(local);
    if (i == 0) {
      for (const std::string &axis : have.partial)
        if (!required.uses(axis))
          passedPartial.push_back(axis);
      continue;
    }
    llvm::erase_if(passedPartial, [&](const std::string &axis) {
      return required.uses(axis) || !llvm::is_contained(have.partial, axis);
    });
  }
  SmallVector<Value> operands;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    Layout required = project(rule->operandFactors[i]);
    if (linear)
      required.partial = passedPartial;
    operands.push_back(
        reshard(localOf.lookup(operand), required, op->getLoc()));
  }
  return operands;
}

Operation *Partitioner::cloneWithLocalTypes(Operation *op,
                                            ArrayRef<Value> operands,
                                            int64_t meanShards) {
  // Same attributes, local result types. A result lacks the factors it does
  // not have; if one of those is split, it holds partial sums over its
  // axes. Partial sums an op passes through stay.
  Operation *local = builder.clone(*op);
  local->setOperands(operands);
  SmallVector<std::string, 2> passedPartial;
  if (op->hasTrait<PassesPartialSums>() && !operands.empty())
    passedPartial = actual.lookup(operands.front()).partial;
  std::vector<Layout> layouts;
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Layout layout = project(rule->resultFactors[r]);
    llvm::SmallDenseSet<int64_t> present;
    for (const auto &dim : rule->resultFactors[r])
      for (int64_t f : dim)
        present.insert(f);
    for (const auto &dims : rule->operandFactors)
      for (const auto &dim : dims)
        for (int64_t f : dim)
          if (!present.contains(f))
            for (const std::string &axis : factorAxes[f])
              if (!llvm::is_contained(layout.partial, axis))
                layout.partial.push_back(axis);
    for (const std::string &axis : passedPartial)
      if (!llvm::is_contained(layout.partial, axis))
        layout.partial.push_back(axis);
    local->getResult(r).setType(
        localType(cast<RankedTensorType>(result.getType()), layout));
    layouts.push_back(layout);
  }
  annotate(local, layouts);
  setResult(op, local->getResult(0), layouts[0], meanShards);
  for (unsigned r = 1; r < op->getNumResults(); ++r) {
    localOf[op->getResult(r)] = local->getResult(r);
    actual[local->getResult(r)] = layouts[r];
  }
  return local;
}

LogicalResult Partitioner::partitionByDefault(Operation *op) {
  assignFactors();
  FailureOr<SmallVector<Value>> operands = localOperands(op);
  if (failed(operands))
    return failure();
  cloneWithLocalTypes(op, *operands);
  return success();
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  if (isa<ParamOp, InputOp, ConstantOp>(op))
    return partitionSource(op);
  if (!isa<ShardingRuleOpInterface>(op))
    return op->emitError() << "rtx-partition does not support '"
                           << op->getName() << "' in a global program";
  current = op;
  rule = &rules.at(op);
  if (auto custom = dyn_cast<PartitionOpInterface>(op))
    return custom.partition(*this);
  return partitionByDefault(op);
}

/// A declared split must divide its dimension: rtx-partition makes block
/// shards of equal size (rtx-pad-vocabulary pads the vocabulary first).
LogicalResult Partitioner::checkDivisible(Value global, Location loc,
                                          StringRef what) {
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!type)
    return success();
  Layout layout = declared(global);
  for (auto [d, axes] : llvm::enumerate(layout.dims)) {
    if (axes.empty() || d >= static_cast<size_t>(type.getRank()))
      continue;
    int64_t n = mesh.product(axes);
    if (type.getDimSize(d) % n != 0)
      return emitError(loc)
             << "rtx-partition: " << what << " splits dimension " << d
             << " of size " << type.getDimSize(d) << " over "
             << Layout::axesStr(axes) << " (" << n
             << " ranks), which does not divide it; pad the dimension or "
                "split another one";
  }
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (BlockArgument arg : body.getArguments()) {
    std::string what = "argument " + std::to_string(arg.getArgNumber());
    if (auto name = function.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), RTXDialect::getParamAttrName()))
      what = "parameter '" + name.getValue().str() + "'";
    if (failed(checkDivisible(arg, function.getLoc(), what)))
      return failure();
  }
  for (Operation &op : body.without_terminator()) {
    std::string what =
        "the result of '" + op.getName().getStringRef().str() + "'";
    if (auto param = dyn_cast<ParamOp>(op))
      what = "parameter '" + param.getName().str() + "'";
    for (Value result : op.getResults())
      if (failed(checkDivisible(result, op.getLoc(), what)))
        return failure();
  }
  for (Operation &op : body.without_terminator())
    if (auto ruleOp = dyn_cast<ShardingRuleOpInterface>(&op))
      rules[&op] = ruleOp.getShardingRule();
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    Layout layout = declared(arg);
    arg.setType(localType(type, layout));
    localOf[arg] = arg;
    actual[arg] = layout;
  }
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  builder.setInsertionPoint(ret);
  for (Operation *op : ops) {
    // Arguments already carry local types; look operands up by identity.
    if (failed(partitionOp(op)))
      return failure();
  }
  SmallVector<Value> results;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    Layout target =
        function.getResultAttrOfType<ShardingAttr>(
            i, RTXDialect::getShardingAttrName())
            ? Layout::fromAttr(function.getResultAttrOfType<ShardingAttr>(
                  i, RTXDialect::getShardingAttrName()))
            : Layout::replicated(
                  cast<RankedTensorType>(operand.getType()).getRank());
    results.push_back(reshard(localOf.lookup(operand), target, ret.getLoc()));
  }
  ret->setOperands(results);
  for (Operation *op : llvm::reverse(ops)) {
    op->dropAllUses();
    op->erase();
  }
  function.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  return success();
}

namespace {
struct RTXPartitionPass : mlir::rtx::impl::RTXPartitionBase<RTXPartitionPass> {
  // The pass brings its own rules, so no tool can run it without them.
  void getDependentDialects(DialectRegistry &registry) const override {
    RTXPartitionBase::getDependentDialects(registry);
    registerPartitionRules(registry);
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-partition");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() && failed(Partitioner(function, mesh).run()))
        return signalPassFailure();
    module->setAttr(RTXDialect::getPhaseAttrName(),
                    StringAttr::get(module.getContext(), "local"));
  }
};
} // namespace
