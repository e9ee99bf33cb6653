//===- Partition.cpp - the rtx-partition pass -----------------------------===//
//
// Rewrites a fully sharded global program into the per-rank program, with
// the collectives its shardings imply. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPARTITION
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
class Partitioner {
public:
  Partitioner(func::FuncOp function, const MeshAxes &mesh)
      : function(function), mesh(mesh), ctx(function.getContext()),
        builder(function.getContext()) {}

  LogicalResult run();

private:
  Layout declared(Value global);
  RankedTensorType localType(RankedTensorType global, const Layout &layout);
  void annotate(Operation *op, ArrayRef<Layout> layouts);
  Value reshard(Value local, const Layout &to, Location loc);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionSource(Operation *op);
  LogicalResult partitionRowParallelLinearWithBias(
      LinearOp op, ArrayRef<Value> operands,
      llvm::function_ref<Layout(const OpShardingRule::ValueFactors &)> project,
      const OpShardingRule &rule);
  SmallVector<std::string, 2> vocabSplit(Operation *op,
                                         const OpShardingRule &rule,
                                         const llvm::StringSet<> &used);
  LogicalResult partitionVocabParallelLoss(
      Operation *op, ArrayRef<std::string> vocab,
      llvm::function_ref<Layout(const OpShardingRule::ValueFactors &)> project,
      const OpShardingRule &rule, int64_t meanShards);
  struct VocabStats {
    /// The logits the statistics are computed from: f32 for bf16/f16 ones.
    Value logits;
    Value max, sumExp, labelLogit;
  };
  const VocabStats &vocabStats(Value logits, Value labels, const Layout &tokens,
                               ArrayRef<std::string> vocab, IntegerAttr ignore,
                               Location loc);
  void setResult(Operation *op, Value result, const Layout &layout,
                 int64_t meanShards);

  func::FuncOp function;
  const MeshAxes &mesh;
  MLIRContext *ctx;
  OpBuilder builder;
  llvm::DenseMap<Value, Value> localOf;
  llvm::DenseMap<Value, Layout> actual;
  std::map<std::pair<void *, std::string>, Value> reshardCache;
  /// Every op's rule at global shapes, taken before arguments change type.
  std::map<Operation *, OpShardingRule> rules;
  /// The global softmax statistics of split logits, by (logits, labels), so
  /// the loss gradient reuses the forward pass's, as Megatron saves them.
  std::map<std::pair<void *, void *>, VocabStats> vocabStatsCache;
};
} // namespace

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

static ArrayAttr axesAttr(OpBuilder &b, ArrayRef<std::string> axes) {
  SmallVector<StringRef> refs(axes.begin(), axes.end());
  return b.getStrArrayAttr(refs);
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
      auto type = withDim(v, scatterDim,
                          typeOf(v).getDimSize(scatterDim) /
                              mesh.product(reduce));
      finish(ReduceScatterOp::create(builder, loc, type, v, meshRef,
                                     axesAttr(builder, reduce),
                                     ReductionKind::Sum,
                                     static_cast<uint64_t>(scatterDim)));
    } else {
      finish(AllReduceOp::create(builder, loc, v.getType(), v, meshRef,
                                 axesAttr(builder, reduce),
                                 ReductionKind::Sum));
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
      finish(AllToAllOp::create(builder, loc, type, v, meshRef,
                                axesAttr(builder, moved),
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
    auto type =
        withDim(v, d, typeOf(v).getDimSize(d) * mesh.product(gathered));
    finish(AllGatherOp::create(builder, loc, type, v, meshRef,
                               axesAttr(builder, gathered),
                               static_cast<uint64_t>(d)));
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
    finish(MeshSliceOp::create(builder, loc, type, v, meshRef,
                               axesAttr(builder, added),
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
          builder, op->getLoc(), DenseElementsAttr::get(type, value.getSplatValue<Attribute>()));
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

LogicalResult Partitioner::partitionRowParallelLinearWithBias(
    LinearOp op, ArrayRef<Value> operands,
    llvm::function_ref<Layout(const OpShardingRule::ValueFactors &)> project,
    const OpShardingRule &rule) {
  Location loc = op.getLoc();
  Layout resultLayout = project(rule.resultFactors[0]);
  // y = x W^T without the bias: partial sums over the split input features.
  Layout partialLayout = resultLayout;
  for (const std::string &axis : actual.lookup(operands[1]).dims[1])
    partialLayout.partial.push_back(axis);
  auto type = localType(op.getType(), resultLayout);
  auto product = LinearOp::create(builder, loc, type, operands[0], operands[1],
                                  Value());
  annotate(product, {partialLayout});
  actual[product] = partialLayout;
  // Reduce straight into the layout the result is wanted in: with the
  // sequence split (Megatron sequence parallelism) that is a reduce-scatter.
  Layout wanted = declared(op.getResult());
  wanted.partial.clear();
  if (!wanted.dims.back().empty() &&
      wanted.dims.back() != resultLayout.dims.back())
    wanted = resultLayout;
  resultLayout = wanted;
  type = localType(op.getType(), resultLayout);
  Value reduced = reshard(product, resultLayout, loc);
  // The bias, broadcast over the leading dimensions, in the result's split.
  Layout biasLayout = Layout::replicated(1);
  biasLayout.dims[0] = resultLayout.dims.back();
  Value bias = reshard(operands[2], biasLayout, loc);
  SmallVector<int64_t> dims = {type.getRank() - 1};
  auto broadcast = BroadcastOp::create(builder, loc, type, bias,
                                       builder.getDenseI64ArrayAttr(dims));
  annotate(broadcast, {resultLayout});
  actual[broadcast] = resultLayout;
  auto sum = AddOp::create(builder, loc, reduced, broadcast);
  annotate(sum, {resultLayout});
  actual[sum] = resultLayout;
  localOf[op.getResult()] = sum;
  return success();
}

/// The axes that split the vocabulary (last) dimension of a loss' logits,
/// or of its gradient, when the vocab-parallel rewrite can keep them: they
/// divide the vocabulary and no other factor of the op uses them.
SmallVector<std::string, 2>
Partitioner::vocabSplit(Operation *op, const OpShardingRule &rule,
                        const llvm::StringSet<> &used) {
  int64_t vocabFactor = rule.operandFactors[0].back().front();
  for (Value v : {op->getOperand(0), Value(op->getResult(0))}) {
    Layout layout = declared(v);
    if (layout.dims.empty() || layout.dims.back().empty())
      continue;
    const auto &axes = layout.dims.back();
    if (rule.factorSizes[vocabFactor] % mesh.product(axes) != 0 ||
        llvm::any_of(axes,
                     [&](const std::string &a) { return used.contains(a); }))
      return {};
    return SmallVector<std::string, 2>(axes.begin(), axes.end());
  }
  return {};
}

const Partitioner::VocabStats &
Partitioner::vocabStats(Value logits, Value labels, const Layout &tokens,
                        ArrayRef<std::string> vocab, IntegerAttr ignore,
                        Location loc) {
  auto key =
      std::make_pair(logits.getAsOpaquePointer(), labels.getAsOpaquePointer());
  if (auto it = vocabStatsCache.find(key); it != vocabStatsCache.end())
    return it->second;
  auto track = [&](Operation *created, const Layout &layout) {
    annotate(created, {layout});
    actual[created->getResult(0)] = layout;
    return created->getResult(0);
  };
  VocabStats result;
  // Lower-precision logits are upcast first, as Megatron does: exp and the
  // sums over the vocabulary would otherwise round to bf16.
  auto logitsType = cast<RankedTensorType>(logits.getType());
  if (!logitsType.getElementType().isF32() &&
      !logitsType.getElementType().isF64()) {
    logitsType = logitsType.clone(builder.getF32Type());
    logits = track(ConvertOp::create(builder, loc, logitsType, logits),
                   actual.lookup(logits));
  }
  result.logits = logits;
  auto type =
      RankedTensorType::get(cast<RankedTensorType>(labels.getType()).getShape(),
                            logitsType.getElementType());
  int64_t last = logitsType.getRank() - 1;
  Layout partial = tokens;
  partial.partial.append(vocab.begin(), vocab.end());
  // Each rank's maximum and (where it owns the label) label logit; their
  // max and sum over the vocabulary axes are the global ones.
  auto stats =
      VocabLogitStatsOp::create(builder, loc, type, type, logits, labels,
                                mesh.name(), axesAttr(builder, vocab), ignore);
  annotate(stats, {partial, partial});
  actual[stats.getMax()] = partial;
  actual[stats.getLabelLogit()] = partial;
  result.max =
      track(AllReduceOp::create(builder, loc, type, stats.getMax(), mesh.name(),
                                axesAttr(builder, vocab), ReductionKind::Max),
            tokens);
  result.labelLogit = reshard(stats.getLabelLogit(), tokens, loc);
  // sum(exp(logits - max)) over the shard, then over the vocabulary axes.
  Layout logitsLayout = actual.lookup(logits);
  auto leading = llvm::to_vector(llvm::seq<int64_t>(0, last));
  Value max = track(BroadcastOp::create(builder, loc, logitsType, result.max,
                                        builder.getDenseI64ArrayAttr(leading)),
                    logitsLayout);
  Value shifted = track(SubOp::create(builder, loc, logits, max), logitsLayout);
  Value exp = track(ExpOp::create(builder, loc, shifted), logitsLayout);
  Value sum = track(ReduceOp::create(builder, loc, type, ReductionKind::Sum,
                                     exp, builder.getDenseI64ArrayAttr({last}),
                                     /*keepdim=*/false),
                    partial);
  result.sumExp = reshard(sum, tokens, loc);
  return vocabStatsCache[key] = result;
}

/// Megatron's vocab-parallel cross-entropy: the logits stay split along the
/// vocabulary; three all-reduces of per-token statistics (max, label logit,
/// sum of exponentials) replace gathering them, and the gradient is computed
/// on each shard from the same statistics.
LogicalResult Partitioner::partitionVocabParallelLoss(
    Operation *op, ArrayRef<std::string> vocab,
    llvm::function_ref<Layout(const OpShardingRule::ValueFactors &)> project,
    const OpShardingRule &rule, int64_t meanShards) {
  Location loc = op->getLoc();
  Value logits = reshard(localOf.lookup(op->getOperand(0)),
                         project(rule.operandFactors[0]), loc);
  Layout tokens = project(rule.operandFactors[1]);
  Value labels = reshard(localOf.lookup(op->getOperand(1)), tokens, loc);
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  VocabStats stats = vocabStats(logits, labels, tokens, vocab, ignore, loc);
  if (isa<CrossEntropyOp>(op)) {
    // The mean over split tokens is a partial sum over their axes.
    Layout layout = Layout::replicated(0);
    for (const auto &axes : tokens.dims)
      layout.partial.append(axes.begin(), axes.end());
    auto loss = VocabCrossEntropyOp::create(
        builder, loc, op->getResult(0).getType(), stats.max, stats.sumExp,
        stats.labelLogit, labels, ignore);
    annotate(loss, {layout});
    setResult(op, loss, layout, meanShards);
    return success();
  }
  Value lossGrad =
      reshard(localOf.lookup(op->getOperand(2)), Layout::replicated(0), loc);
  Layout layout = project(rule.resultFactors[0]);
  Value grad = VocabCrossEntropyGradOp::create(
      builder, loc, stats.logits.getType(), stats.logits, labels, lossGrad,
      stats.max, stats.sumExp, mesh.name(), axesAttr(builder, vocab), ignore);
  annotate(grad.getDefiningOp(), {layout});
  if (grad.getType() != logits.getType()) {
    grad = ConvertOp::create(builder, loc, logits.getType(), grad);
    annotate(grad.getDefiningOp(), {layout});
  }
  setResult(op, grad, layout, meanShards);
  return success();
}

/// Records `result` as the local value of `op`'s first result. Means over
/// split dimensions count only each rank's share, so with `meanShards` > 1
/// the result is scaled by 1/k to make the partial sums add up to the global
/// mean.
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

LogicalResult Partitioner::partitionOp(Operation *op) {
  if (isa<ParamOp, InputOp, ConstantOp>(op))
    return partitionSource(op);
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return op->emitError() << "rtx-partition does not support '"
                           << op->getName() << "' in a global program";
  const OpShardingRule &rule = rules.at(op);

  // How this op splits each factor: from its results' shardings, then (for
  // factors no result has) from its operands'.
  // Each factor takes the axes of the first tensor (in the order below)
  // that splits it, unless another factor already took them.
  SmallVector<SmallVector<std::string, 2>> factorAxes(rule.getNumFactors());
  llvm::StringSet<> taken;
  auto collect = [&](Value global, const OpShardingRule::ValueFactors &dims) {
    Layout layout = declared(global);
    for (size_t d = 0; d < dims.size() && d < layout.dims.size(); ++d) {
      if (dims[d].empty() || layout.dims[d].empty())
        continue;
      int64_t f = dims[d].front();
      if (factorAxes[f].empty() &&
          rule.factorKinds[f] != FactorKind::NeedReplication &&
          rule.factorSizes[f] % mesh.product(layout.dims[d]) == 0 &&
          llvm::none_of(layout.dims[d], [&](const std::string &a) {
            return taken.contains(a);
          })) {
        factorAxes[f].assign(layout.dims[d].begin(), layout.dims[d].end());
        for (const std::string &a : layout.dims[d])
          taken.insert(a);
      }
    }
  };
  // A loss' logits split along the vocabulary keep their axes: the
  // vocab-parallel rewrite below needs them, and gathering the tokens (the
  // labels, with Megatron sequence parallelism) is cheaper than moving
  // logits.
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op)) {
    Layout logits = declared(op->getOperand(0));
    int64_t vocabFactor = rule.operandFactors[0].back().front();
    if (!logits.dims.empty() && !logits.dims.back().empty() &&
        rule.factorSizes[vocabFactor] % mesh.product(logits.dims.back()) == 0)
      for (const std::string &axis : logits.dims.back())
        taken.insert(axis);
  }
  // Parameters' layouts are deliberate (Megatron's column/row splits), so
  // they claim their axes first; then the results; then other operands.
  auto isParameter = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return static_cast<bool>(
          function.getArgAttr(arg.getArgNumber(), "rtx.param"));
    return isa_and_nonnull<ParamOp>(v.getDefiningOp());
  };
  for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operandFactors))
    if (isParameter(operand))
      collect(operand, dims);
  for (auto [result, dims] : llvm::zip(op->getResults(), rule.resultFactors))
    collect(result, dims);
  for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operandFactors))
    collect(operand, dims);
  // A split of a dimension's minor factor (the sequence in [B*S] after a
  // merge) is not a block split of that dimension: such factors stay whole
  // for this op, and their operands are gathered.
  auto dropMinorSplits = [&](ArrayRef<OpShardingRule::ValueFactors> values) {
    for (const auto &dims : values)
      for (const auto &dim : dims)
        for (size_t k = 1; k < dim.size(); ++k)
          factorAxes[dim[k]].clear();
  };
  dropMinorSplits(rule.operandFactors);
  dropMinorSplits(rule.resultFactors);
  llvm::StringSet<> used;
  for (auto &axes : factorAxes) {
    if (llvm::any_of(axes, [&](const std::string &a) { return used.contains(a); }))
      axes.clear();
    for (const std::string &a : axes)
      used.insert(a);
  }
  auto project = [&](const OpShardingRule::ValueFactors &dims) {
    Layout layout = Layout::replicated(dims.size());
    for (size_t d = 0; d < dims.size(); ++d)
      if (!dims[d].empty())
        layout.dims[d].assign(factorAxes[dims[d].front()].begin(),
                              factorAxes[dims[d].front()].end());
    return layout;
  };

  // Means over split dimensions: each rank's mean counts only its share.
  int64_t meanShards = 1;
  if (auto reduce = dyn_cast<ReduceOp>(op);
      reduce && reduce.getKind() == ReductionKind::Mean)
    for (int64_t d : reduce.getDims())
      meanShards *= mesh.product(factorAxes[rule.operandFactors[0][d].front()]);
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op)) {
    for (const auto &dim : llvm::ArrayRef(rule.operandFactors[1]))
      if (!dim.empty())
        meanShards *= mesh.product(factorAxes[dim.front()]);
    // The vocabulary needs whole logits in the generic rule; split ones take
    // the vocab-parallel rewrite instead of a gather.
    SmallVector<std::string, 2> vocab = vocabSplit(op, rule, used);
    if (!vocab.empty()) {
      factorAxes[rule.operandFactors[0].back().front()].assign(vocab.begin(),
                                                               vocab.end());
      return partitionVocabParallelLoss(op, vocab, project, rule, meanShards);
    }
  }

  // Operands in the layout the op needs. Additions and pure data movement
  // take partial sums as they are (they are linear).
  bool linear = isa<AddOp, SubOp, ReshapeOp, TransposeOp, NegOp>(op);
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
    Layout required = project(rule.operandFactors[i]);
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
    Layout required = project(rule.operandFactors[i]);
    if (linear)
      required.partial = passedPartial;
    operands.push_back(
        reshard(localOf.lookup(operand), required, op->getLoc()));
  }

  // A row-parallel linear layer leaves partial sums; its bias must be added
  // once, after they are reduced (as Megatron does), not on every rank.
  if (auto linear = dyn_cast<LinearOp>(op); linear && linear.getBias()) {
    const auto &inDims = rule.operandFactors[1][1];
    if (!inDims.empty() && !factorAxes[inDims.front()].empty())
      return partitionRowParallelLinearWithBias(linear, operands, project,
                                                rule);
  }

  // The local op: same attributes, local result types. A result lacks the
  // factors it does not have; if one of those is split, it holds partial
  // sums over its axes.
  Operation *local = builder.clone(*op);
  local->setOperands(operands);
  std::vector<Layout> layouts;
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    Layout layout = project(rule.resultFactors[r]);
    llvm::SmallDenseSet<int64_t> present;
    for (const auto &dim : rule.resultFactors[r])
      for (int64_t f : dim)
        present.insert(f);
    for (const auto &dims : rule.operandFactors)
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
  // A slice may only be split along dimensions it takes whole; there its
  // range becomes the local extent.
  if (auto slice = dyn_cast<SliceOp>(local)) {
    SmallVector<int64_t> limits(slice.getLimits());
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(slice.getType()).getShape();
    for (size_t d = 0; d < limits.size(); ++d)
      if (!layouts[0].dims[d].empty())
        limits[d] = shape[d];
    slice.setLimitsAttr(builder.getDenseI64ArrayAttr(limits));
  }

  // A vocabulary split of an embedding's table (or of its gradient) leaves
  // each rank the rows of its shard: the local op offsets the ids by it.
  if (isa<EmbeddingOp, EmbeddingGradOp>(local)) {
    int64_t vocabFactor = isa<EmbeddingOp>(local)
                              ? rule.operandFactors[0][0].front()
                              : rule.resultFactors[0][0].front();
    if (!factorAxes[vocabFactor].empty()) {
      local->setAttr("vocab_mesh", FlatSymbolRefAttr::get(ctx, mesh.name()));
      local->setAttr("vocab_axes", axesAttr(builder, factorAxes[vocabFactor]));
    }
  }

  setResult(op, local->getResult(0), layouts[0], meanShards);
  for (unsigned r = 1; r < op->getNumResults(); ++r) {
    localOf[op->getResult(r)] = local->getResult(r);
    actual[local->getResult(r)] = layouts[r];
  }
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
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
  function.setFunctionType(FunctionType::get(
      ctx, body.getArgumentTypes(), ValueRange(results).getTypes()));
  return success();
}

namespace {
struct RTXPartitionPass
    : mlir::rtx::impl::RTXPartitionBase<RTXPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-partition");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() &&
          failed(Partitioner(function, mesh).run()))
        return signalPassFailure();
    module->setAttr("rtx.phase", StringAttr::get(module.getContext(), "local"));
  }
};
} // namespace
