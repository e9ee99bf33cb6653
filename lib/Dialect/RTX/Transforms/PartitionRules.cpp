//===- PartitionRules.cpp - the ops rtx-partition treats specially --------===//
//
// PartitionOpInterface's external models: the ops whose per-rank form is
// not their clone with local types. Each composes the default rule's steps
// (Partitioner.h) with what its op needs:
//   - linear: a row-parallel layer's bias is added once, after the reduction;
//   - embedding and its gradient: a split vocabulary offsets the ids;
//   - slice: a split dimension's range becomes the local extent;
//   - reduce mean: over split dimensions, each rank's share is rescaled;
//   - cross-entropy and its gradient: logits split along the vocabulary
//     keep their split (Megatron's vocab-parallel loss).
// rtx-partition attaches these itself (registerPartitionRules).
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// Split logits' global statistics (see vocabStats).
struct VocabStats {
  /// The logits the statistics are computed from: f32 for bf16/f16 ones.
  Value logits;
  Value max, sumExp, labelLogit;
};
} // namespace

/// A row-parallel linear layer leaves partial sums; its bias must be added
/// once, after they are reduced (as Megatron does), not on every rank.
static LogicalResult
partitionRowParallelLinearWithBias(LinearOp op, ArrayRef<Value> operands,
                                   Partitioner &p) {
  OpBuilder &builder = p.getBuilder();
  Location loc = op.getLoc();
  Layout resultLayout = p.project(p.getRule().resultFactors[0]);
  // y = x W^T without the bias: partial sums over the split input features.
  Layout partialLayout = resultLayout;
  // getLayout returns a copy: keep it alive for the loop (a range-for over
  // `p.getLayout(w).dims[1]` reads a destroyed temporary; ASan found it).
  Layout weightLayout = p.getLayout(operands[1]);
  for (const std::string &axis : weightLayout.dims[1])
    partialLayout.partial.push_back(axis);
  auto type = p.localType(op.getType(), resultLayout);
  auto product =
      LinearOp::create(builder, loc, type, operands[0], operands[1], Value());
  p.annotate(product, {partialLayout});
  p.track(product.getResult(), partialLayout);
  // Reduce straight into the layout the result is wanted in: with the
  // sequence split (Megatron sequence parallelism) that is a reduce-scatter.
  Layout wanted = p.declared(op.getResult());
  wanted.partial.clear();
  if (!wanted.dims.back().empty() &&
      wanted.dims.back() != resultLayout.dims.back())
    wanted = resultLayout;
  resultLayout = wanted;
  type = p.localType(op.getType(), resultLayout);
  Value reduced = p.reshard(product, resultLayout, loc);
  // The bias, broadcast over the leading dimensions, in the result's split.
  Layout biasLayout = Layout::replicated(1);
  biasLayout.dims[0] = resultLayout.dims.back();
  Value bias = p.reshard(operands[2], biasLayout, loc);
  SmallVector<int64_t> dims = {type.getRank() - 1};
  auto broadcast = BroadcastOp::create(builder, loc, type, bias,
                                       builder.getDenseI64ArrayAttr(dims));
  p.annotate(broadcast, {resultLayout});
  p.track(broadcast.getResult(), resultLayout);
  auto sum = AddOp::create(builder, loc, reduced, broadcast);
  p.annotate(sum, {resultLayout});
  p.setResult(op, sum, resultLayout, 1);
  return success();
}

/// The axes that split the vocabulary (last) dimension of a loss' logits,
/// or of its gradient, when the vocab-parallel rewrite can keep them: they
/// divide the vocabulary and no other factor of the op uses them.
static SmallVector<std::string, 2> vocabSplit(Operation *op, Partitioner &p) {
  const OpShardingRule &rule = p.getRule();
  const llvm::StringSet<> &used = p.getUsedAxes();
  int64_t vocabFactor = rule.operandFactors[0].back().front();
  for (Value v : {op->getOperand(0), Value(op->getResult(0))}) {
    Layout layout = p.declared(v);
    if (layout.dims.empty() || layout.dims.back().empty())
      continue;
    const auto &axes = layout.dims.back();
    if (rule.factorSizes[vocabFactor] % p.getMesh().product(axes) != 0 ||
        llvm::any_of(axes,
                     [&](const std::string &a) { return used.contains(a); }))
      return {};
    return SmallVector<std::string, 2>(axes.begin(), axes.end());
  }
  return {};
}

/// The global softmax statistics of split logits, computed once per (logits,
/// labels) so the loss gradient reuses the forward pass's, as Megatron
/// saves them.
static VocabStats vocabStats(Value logits, Value labels, const Layout &tokens,
                             ArrayRef<std::string> vocab, IntegerAttr ignore,
                             Location loc, Partitioner &p) {
  auto key =
      std::make_pair(logits.getAsOpaquePointer(), labels.getAsOpaquePointer());
  if (auto it = p.ruleCache.find(key); it != p.ruleCache.end())
    return {it->second[0], it->second[1], it->second[2], it->second[3]};
  OpBuilder &builder = p.getBuilder();
  const MeshAxes &mesh = p.getMesh();
  auto track = [&](Operation *created, const Layout &layout) {
    return p.track(created, layout);
  };
  VocabStats result;
  // Lower-precision logits are upcast first, as Megatron does: exp and the
  // sums over the vocabulary would otherwise round to bf16.
  auto logitsType = cast<RankedTensorType>(logits.getType());
  if (!logitsType.getElementType().isF32() &&
      !logitsType.getElementType().isF64()) {
    logitsType = logitsType.clone(builder.getF32Type());
    logits = track(ConvertOp::create(builder, loc, logitsType, logits),
                   p.getLayout(logits));
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
                                mesh.name(), p.axesAttr(vocab), ignore);
  p.annotate(stats, {partial, partial});
  p.track(stats.getMax(), partial);
  p.track(stats.getLabelLogit(), partial);
  result.max =
      track(AllReduceOp::create(builder, loc, type, stats.getMax(), mesh.name(),
                                p.axesAttr(vocab), ReductionKind::Max),
            tokens);
  result.labelLogit = p.reshard(stats.getLabelLogit(), tokens, loc);
  // sum(exp(logits - max)) over the shard, then over the vocabulary axes.
  Layout logitsLayout = p.getLayout(logits);
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
  result.sumExp = p.reshard(sum, tokens, loc);
  p.ruleCache[key] = {result.logits, result.max, result.sumExp,
                      result.labelLogit};
  return result;
}

/// Megatron's vocab-parallel cross-entropy: the logits stay split along the
/// vocabulary; three all-reduces of per-token statistics (max, label logit,
/// sum of exponentials) replace gathering them, and the gradient is computed
/// on each shard from the same statistics.
static LogicalResult partitionVocabParallelLoss(Operation *op,
                                                ArrayRef<std::string> vocab,
                                                int64_t meanShards,
                                                Partitioner &p) {
  OpBuilder &builder = p.getBuilder();
  const OpShardingRule &rule = p.getRule();
  Location loc = op->getLoc();
  Value logits = p.reshard(p.getLocal(op->getOperand(0)),
                           p.project(rule.operandFactors[0]), loc);
  Layout tokens = p.project(rule.operandFactors[1]);
  Value labels = p.reshard(p.getLocal(op->getOperand(1)), tokens, loc);
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  VocabStats stats = vocabStats(logits, labels, tokens, vocab, ignore, loc, p);
  if (isa<CrossEntropyOp>(op)) {
    // The mean over split tokens is a partial sum over their axes.
    Layout layout = Layout::replicated(0);
    for (const auto &axes : tokens.dims)
      layout.partial.append(axes.begin(), axes.end());
    auto loss = VocabCrossEntropyOp::create(
        builder, loc, op->getResult(0).getType(), stats.max, stats.sumExp,
        stats.labelLogit, labels, ignore);
    p.annotate(loss, {layout});
    p.setResult(op, loss, layout, meanShards);
    return success();
  }
  Value lossGrad =
      p.reshard(p.getLocal(op->getOperand(2)), Layout::replicated(0), loc);
  Layout layout = p.project(rule.resultFactors[0]);
  Value grad = VocabCrossEntropyGradOp::create(
      builder, loc, stats.logits.getType(), stats.logits, labels, lossGrad,
      stats.max, stats.sumExp, p.getMesh().name(), p.axesAttr(vocab), ignore);
  p.annotate(grad.getDefiningOp(), {layout});
  if (grad.getType() != logits.getType()) {
    grad = ConvertOp::create(builder, loc, logits.getType(), grad);
    p.annotate(grad.getDefiningOp(), {layout});
  }
  p.setResult(op, grad, layout, meanShards);
  return success();
}

namespace {

struct LinearPartition
    : PartitionOpInterface::ExternalModel<LinearPartition, LinearOp> {
  LogicalResult partition(Operation *op, Partitioner &p) const {
    p.assignFactors();
    FailureOr<SmallVector<Value>> operands = p.localOperands(op);
    if (failed(operands))
      return failure();
    const auto &inDims = p.getRule().operandFactors[1][1];
    if (cast<LinearOp>(op).getBias() && !inDims.empty() &&
        !p.getFactorAxes()[inDims.front()].empty())
      return partitionRowParallelLinearWithBias(cast<LinearOp>(op), *operands,
                                                p);
    p.cloneWithLocalTypes(op, *operands);
    return success();
  }
};

/// A vocabulary split of an embedding's table (or of its gradient) leaves
/// each rank the rows of its shard: the local op offsets the ids by it.
template <typename OpTy>
struct EmbeddingPartition
    : PartitionOpInterface::ExternalModel<EmbeddingPartition<OpTy>, OpTy> {
  LogicalResult partition(Operation *op, Partitioner &p) const {
    if (failed(p.partitionByDefault(op)))
      return failure();
    const OpShardingRule &rule = p.getRule();
    int64_t vocabFactor = std::is_same_v<OpTy, EmbeddingOp>
                              ? rule.operandFactors[0][0].front()
                              : rule.resultFactors[0][0].front();
    const auto &axes = p.getFactorAxes()[vocabFactor];
    if (axes.empty())
      return success();
    Operation *local = p.getLocal(op->getResult(0)).getDefiningOp();
    local->setAttr("vocab_mesh", FlatSymbolRefAttr::get(op->getContext(),
                                                        p.getMesh().name()));
    local->setAttr("vocab_axes", p.axesAttr(axes));
    return success();
  }
};

/// A slice may only be split along dimensions it takes whole (its rule makes
/// the others need-replication); there its range becomes the local extent.
struct SlicePartition
    : PartitionOpInterface::ExternalModel<SlicePartition, SliceOp> {
  LogicalResult partition(Operation *op, Partitioner &p) const {
    if (failed(p.partitionByDefault(op)))
      return failure();
    auto slice = cast<SliceOp>(p.getLocal(op->getResult(0)).getDefiningOp());
    Layout layout = p.getLayout(slice.getResult());
    SmallVector<int64_t> limits(slice.getLimits());
    ArrayRef<int64_t> shape = slice.getType().getShape();
    for (size_t d = 0; d < limits.size(); ++d)
      if (!layout.dims[d].empty())
        limits[d] = shape[d];
    slice.setLimitsAttr(p.getBuilder().getDenseI64ArrayAttr(limits));
    return success();
  }
};

/// A mean over split dimensions: each rank's mean counts only its share.
struct ReducePartition
    : PartitionOpInterface::ExternalModel<ReducePartition, ReduceOp> {
  LogicalResult partition(Operation *op, Partitioner &p) const {
    auto reduce = cast<ReduceOp>(op);
    p.assignFactors();
    int64_t meanShards = 1;
    if (reduce.getKind() == ReductionKind::Mean)
      for (int64_t d : reduce.getDims())
        meanShards *= p.getMesh().product(
            p.getFactorAxes()[p.getRule().operandFactors[0][d].front()]);
    FailureOr<SmallVector<Value>> operands = p.localOperands(op);
    if (failed(operands))
      return failure();
    p.cloneWithLocalTypes(op, *operands, meanShards);
    return success();
  }
};

/// The loss and its gradient: a mean over tokens, and logits that keep a
/// vocabulary split through the vocab-parallel rewrite.
template <typename OpTy>
struct CrossEntropyPartition
    : PartitionOpInterface::ExternalModel<CrossEntropyPartition<OpTy>, OpTy> {
  LogicalResult partition(Operation *op, Partitioner &p) const {
    const OpShardingRule &rule = p.getRule();
    // Logits split along the vocabulary keep their axes: the vocab-parallel
    // rewrite needs them, and gathering the tokens (the labels, with
    // Megatron sequence parallelism) is cheaper than moving logits.
    llvm::StringSet<> reserved;
    Layout logits = p.declared(op->getOperand(0));
    int64_t vocabFactor = rule.operandFactors[0].back().front();
    if (!logits.dims.empty() && !logits.dims.back().empty() &&
        rule.factorSizes[vocabFactor] %
                p.getMesh().product(logits.dims.back()) ==
            0)
      for (const std::string &axis : logits.dims.back())
        reserved.insert(axis);
    p.assignFactors(reserved);
    int64_t meanShards = 1;
    for (const auto &dim : llvm::ArrayRef(rule.operandFactors[1]))
      if (!dim.empty())
        meanShards *= p.getMesh().product(p.getFactorAxes()[dim.front()]);
    // The vocabulary needs whole logits in the generic rule; split ones take
    // the vocab-parallel rewrite instead of a gather.
    SmallVector<std::string, 2> vocab = vocabSplit(op, p);
    if (!vocab.empty()) {
      p.getFactorAxes()[vocabFactor].assign(vocab.begin(), vocab.end());
      return partitionVocabParallelLoss(op, vocab, meanShards, p);
    }
    FailureOr<SmallVector<Value>> operands = p.localOperands(op);
    if (failed(operands))
      return failure();
    p.cloneWithLocalTypes(op, *operands, meanShards);
    return success();
  }
};

} // namespace

void mlir::rtx::registerPartitionRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, RTXDialect *) {
    LinearOp::attachInterface<LinearPartition>(*ctx);
    EmbeddingOp::attachInterface<EmbeddingPartition<EmbeddingOp>>(*ctx);
    EmbeddingGradOp::attachInterface<EmbeddingPartition<EmbeddingGradOp>>(*ctx);
    SliceOp::attachInterface<SlicePartition>(*ctx);
    ReduceOp::attachInterface<ReducePartition>(*ctx);
    CrossEntropyOp::attachInterface<CrossEntropyPartition<CrossEntropyOp>>(
        *ctx);
    CrossEntropyGradOp::attachInterface<
        CrossEntropyPartition<CrossEntropyGradOp>>(*ctx);
  });
}
