//===- VerifyDistribution.cpp - the rtx-verify-distribution pass ----------===//
//
// Static checks of a partitioned (per-rank) program. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXVERIFYDISTRIBUTION
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

/// The sharding a partitioned program records for a value.
static std::optional<Layout> layoutOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto function = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!function)
      return std::nullopt;
    if (auto attr = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), RTXDialect::getShardingAttrName()))
      return Layout::fromAttr(attr);
    return std::nullopt;
  }
  Operation *op = v.getDefiningOp();
  Attribute attr = op->getAttr(RTXDialect::getShardingAttrName());
  if (auto sharding = dyn_cast_or_null<ShardingAttr>(attr))
    return Layout::fromAttr(sharding);
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    return Layout::fromAttr(
        cast<ShardingAttr>(array[cast<OpResult>(v).getResultNumber()]));
  return std::nullopt;
}

/// Describes operand/result `index` of `op` for diagnostics.
static std::string valueName(bool isResult, unsigned index) {
  return (isResult ? "result " : "operand ") + std::to_string(index);
}

/// The global shape of a local value, from its recorded sharding.
static SmallVector<int64_t> globalShapeOf(Value v, const MeshAxes &mesh) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  if (std::optional<Layout> layout = layoutOf(v))
    for (size_t d = 0; d < shape.size() && d < layout->dims.size(); ++d)
      shape[d] *= mesh.product(layout->dims[d]);
  return shape;
}

/// The op's rule at global shapes. Reshape and broadcast factor their
/// dimensions by size, and a split can make a local dimension 1 where the
/// global one is not; the other rules depend on ranks only.
static OpShardingRule getGlobalRule(Operation *op, ShardingRuleOpInterface rule,
                                    const MeshAxes &mesh) {
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    OpShardingRule r = makeEmptyShardingRule(op);
    addReshapeFactors(r, globalShapeOf(reshape.getInput(), mesh),
                      globalShapeOf(reshape.getResult(), mesh), 0, 0);
    return r;
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    OpShardingRule r = makeEmptyShardingRule(op);
    SmallVector<int64_t> in = globalShapeOf(broadcast.getInput(), mesh);
    SmallVector<int64_t> out = globalShapeOf(broadcast.getResult(), mesh);
    for (int64_t d = 0; d < (int64_t)out.size(); ++d) {
      int64_t f = r.addFactor(out[d]);
      r.resultFactors[0][d].push_back(f);
      const auto *it = llvm::find(broadcast.getDims(), d);
      if (it != broadcast.getDims().end() &&
          in[it - broadcast.getDims().begin()] == out[d])
        r.operandFactors[0][it - broadcast.getDims().begin()].push_back(f);
    }
    return r;
  }
  return rule.getShardingRule();
}

static LogicalResult verifyModelOp(Operation *op, ShardingRuleOpInterface rule,
                                   const MeshAxes &mesh) {
  // Every rank would add the bias to its partial sum: counted k times.
  if (auto linear = dyn_cast<LinearOp>(op); linear && linear.getBias())
    if (std::optional<Layout> layout = layoutOf(linear.getResult());
        layout && !layout->partial.empty())
      return op->emitOpError()
             << "adds its bias to partial sums over "
             << Layout::axesStr(layout->partial)
             << ": the bias would be counted once per rank";
  OpShardingRule r = getGlobalRule(op, rule, mesh);
  // Every tensor that has a factor as the major part of a dimension must
  // split it the same way.
  struct Seen {
    SmallVector<std::string, 2> axes;
    std::string where;
    int64_t dim;
  };
  llvm::DenseMap<int64_t, Seen> seen;
  auto check = [&](Value v, const OpShardingRule::ValueFactors &dims,
                   bool isResult, unsigned index) -> LogicalResult {
    std::optional<Layout> layout = layoutOf(v);
    if (!layout)
      return success();
    for (size_t d = 0; d < dims.size() && d < layout->dims.size(); ++d) {
      if (dims[d].empty())
        continue;
      int64_t f = dims[d].front();
      SmallVector<std::string, 2> axes(layout->dims[d].begin(),
                                       layout->dims[d].end());
      if (!axes.empty() && r.factorKinds[f] == FactorKind::NeedReplication)
        return op->emitOpError()
               << valueName(isResult, index) << " splits dimension " << d
               << " over " << Layout::axesStr(axes)
               << ", which this op needs whole";
      auto [it, inserted] =
          seen.try_emplace(f, Seen{axes, valueName(isResult, index), (int64_t)d});
      if (!inserted && it->second.axes != axes)
        return op->emitOpError()
               << valueName(isResult, index) << " splits dimension " << d
               << " over " << Layout::axesStr(axes) << " but " << it->second.where
               << " splits dimension " << it->second.dim
               << " (the same loop) over " << Layout::axesStr(it->second.axes);
    }
    return success();
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (i < r.operandFactors.size() &&
        failed(check(operand, r.operandFactors[i], false, i)))
      return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    if (failed(check(result, r.resultFactors[i], true, i)))
      return failure();
  return success();
}

/// An all-reduce or a reduce-scatter, in either form.
static bool reduces(Operation *op) {
  auto collective = dyn_cast<CollectiveOpInterface>(op);
  return collective &&
         (collective.getCollectiveKind() == CollectiveKind::AllReduce ||
          collective.getCollectiveKind() == CollectiveKind::ReduceScatter);
}

/// A partial sum may only be added, moved, or reduced.
static LogicalResult verifyPartialUse(Operation *user, Value v,
                                      unsigned index) {
  std::optional<Layout> layout = layoutOf(v);
  if (!layout || layout->partial.empty())
    return success();
  // The partitioner keeps partial sums through the same ops (the trait).
  if (user->hasTrait<PassesPartialSums>() || isa<func::ReturnOp>(user))
    return success();
  // Scaling a partial sum by a value that is not one is linear. (The
  // partitioner never emits this, but a hand-written local program may.)
  if (isa<MulOp>(user)) {
    std::optional<Layout> other = layoutOf(user->getOperand(1 - index));
    if (other && other->partial.empty())
      return success();
  }
  // Reductions are checked against their axes in verifyCollective.
  if (reduces(user))
    return success();
  return user->emitOpError()
         << "operand " << index << " holds partial sums over "
         << Layout::axesStr(layout->partial)
         << " that must be reduced before this op";
}

/// A collective's axes must match its operand's distribution.
static LogicalResult verifyCollective(Operation *op) {
  std::optional<Layout> layout = layoutOf(op->getOperand(0));
  if (!layout)
    return success();
  SmallVector<std::string, 2> axes;
  for (Attribute axis : op->getAttrOfType<ArrayAttr>("axes"))
    axes.push_back(cast<StringAttr>(axis).getValue().str());
  if (reduces(op))
    for (const std::string &axis : axes)
      if (!llvm::is_contained(layout->partial, axis))
        return op->emitOpError()
               << "reduces over \"" << axis
               << "\", but its operand holds no partial sums over it: the "
                  "result would count every value "
               << "that many times";
  if (cast<CollectiveOpInterface>(op).getCollectiveKind() ==
      CollectiveKind::AllGather) {
    int64_t dim =
        op->getAttrOfType<IntegerAttr>("gather_dim").getValue().getSExtValue();
    auto &have = layout->dims[dim];
    if (have.size() < axes.size() ||
        !std::equal(axes.begin(), axes.end(), have.end() - axes.size()))
      return op->emitOpError()
             << "gathers dimension " << dim << " over " << Layout::axesStr(axes)
             << ", but its operand splits it over " << Layout::axesStr(have);
  }
  return success();
}

/// An op that reads a vocabulary shard must know which one: the axes that
/// split the vocabulary dimension of its table, table gradient or logits are
/// the axes it offsets ids and labels by (none for a whole vocabulary).
static LogicalResult verifyVocabShard(Operation *op) {
  Value value;
  bool isResult = false;
  ArrayAttr axesAttr;
  if (auto e = dyn_cast<EmbeddingOp>(op)) {
    value = e.getTable();
    axesAttr = e.getVocabAxesAttr();
  } else if (auto e = dyn_cast<EmbeddingGradOp>(op)) {
    value = e.getTableGrad();
    isResult = true;
    axesAttr = e.getVocabAxesAttr();
  } else if (auto v = dyn_cast<VocabLogitStatsOp>(op)) {
    value = v.getLogits();
    axesAttr = v.getAxes();
  } else if (auto v = dyn_cast<VocabCrossEntropyGradOp>(op)) {
    value = v.getLogits();
    axesAttr = v.getAxes();
  } else {
    return success();
  }
  std::optional<Layout> layout = layoutOf(value);
  if (!layout)
    return success();
  bool embedding = isa<EmbeddingOp, EmbeddingGradOp>(op);
  int64_t dim = embedding ? 0 : layout->dims.size() - 1;
  SmallVector<std::string, 2> have(layout->dims[dim].begin(),
                                   layout->dims[dim].end());
  SmallVector<std::string, 2> offsetBy;
  if (axesAttr)
    for (Attribute axis : axesAttr)
      offsetBy.push_back(cast<StringAttr>(axis).getValue().str());
  if (have == offsetBy)
    return success();
  return op->emitOpError() << valueName(isResult, 0) << " splits the vocabulary"
                           << " (dimension " << dim << ") over "
                           << Layout::axesStr(have) << ", but the op "
                           << (embedding ? "offsets ids" : "offsets labels")
                           << " by the rank over " << Layout::axesStr(offsetBy);
}

namespace {
struct RTXVerifyDistributionPass
    : mlir::rtx::impl::RTXVerifyDistributionBase<RTXVerifyDistributionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-verify-distribution");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    bool ok = true;
    module.walk([&](Operation *op) {
      for (auto [i, operand] : llvm::enumerate(op->getOperands()))
        ok &= succeeded(verifyPartialUse(op, operand, i));
      if (auto rule = dyn_cast<ShardingRuleOpInterface>(op))
        ok &= succeeded(verifyModelOp(op, rule, mesh));
      ok &= succeeded(verifyVocabShard(op));
      if (isa<CollectiveOpInterface>(op))
        ok &= succeeded(verifyCollective(op));
    });
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
