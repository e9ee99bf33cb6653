//===- RTXShardingRules.cpp - sharding rules of the model ops -------------===//
//
// Each model op's ShardingRuleOpInterface implementation: which dimensions of
// its operands and results are the same loop (factor), which factors are
// reductions, and which must stay replicated. Propagation and partitioning
// read only these rules.
//
// Elementwise ops defined through RTX_UnaryOp / RTX_BinaryOp get their rule
// from the ODS class; the rest are here.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// Appends factors to operand and result dimensions of a rule.
struct RuleBuilder {
  explicit RuleBuilder(Operation *op) : rule(makeEmptyShardingRule(op)) {}

  int64_t factor(int64_t size, FactorKind kind = FactorKind::Parallel) {
    return rule.addFactor(size, kind);
  }
  RuleBuilder &operand(unsigned index, int64_t dim, int64_t factor) {
    rule.operandFactors[index][dim].push_back(factor);
    return *this;
  }
  RuleBuilder &result(unsigned index, int64_t dim, int64_t factor) {
    rule.resultFactors[index][dim].push_back(factor);
    return *this;
  }

  OpShardingRule rule;
};
} // namespace

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// Every result dimension gets its own parallel factor.
static OpShardingRule getSourceRule(Operation *op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  for (size_t d = 0; d < shape.size(); ++d)
    b.result(0, d, b.factor(shape[d]));
  return b.rule;
}

OpShardingRule ParamOp::getShardingRule() { return getSourceRule(*this); }
OpShardingRule InputOp::getShardingRule() { return getSourceRule(*this); }
OpShardingRule ConstantOp::getShardingRule() { return getSourceRule(*this); }

/// `[B..., M, K] x [B..., K, N] -> [B..., M, N]` with optional transposes.
static OpShardingRule getContractionRule(Operation *op, bool transposeLhs,
                                         bool transposeRhs) {
  RuleBuilder b(op);
  ArrayRef<int64_t> lhs = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> rhs = shapeOf(op->getOperand(1));
  size_t r = lhs.size();
  for (size_t d = 0; d + 2 < r; ++d) {
    int64_t f = b.factor(lhs[d]);
    b.operand(0, d, f).operand(1, d, f).result(0, d, f);
  }
  int64_t m = b.factor(transposeLhs ? lhs[r - 1] : lhs[r - 2]);
  int64_t n = b.factor(transposeRhs ? rhs[r - 2] : rhs[r - 1]);
  int64_t k =
      b.factor(transposeLhs ? lhs[r - 2] : lhs[r - 1], FactorKind::Reduction);
  b.operand(0, transposeLhs ? r - 1 : r - 2, m)
      .operand(0, transposeLhs ? r - 2 : r - 1, k);
  b.operand(1, transposeRhs ? r - 1 : r - 2, k)
      .operand(1, transposeRhs ? r - 2 : r - 1, n);
  b.result(0, r - 2, m).result(0, r - 1, n);
  return b.rule;
}

OpShardingRule MatmulOp::getShardingRule() {
  return getContractionRule(*this, getTransposeLhs(), getTransposeRhs());
}
OpShardingRule BatchMatmulOp::getShardingRule() {
  return getContractionRule(*this, getTransposeLhs(), getTransposeRhs());
}

OpShardingRule LinearOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> x = shapeOf(getInput());
  ArrayRef<int64_t> w = shapeOf(getWeight());
  for (size_t d = 0; d + 1 < x.size(); ++d) {
    int64_t f = b.factor(x[d]);
    b.operand(0, d, f).result(0, d, f);
  }
  int64_t out = b.factor(w[0]);
  int64_t in = b.factor(w[1], FactorKind::Reduction);
  b.operand(0, x.size() - 1, in).operand(1, 0, out).operand(1, 1, in);
  if (getBias())
    b.operand(2, 0, out);
  b.result(0, x.size() - 1, out);
  return b.rule;
}

OpShardingRule GeluOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule ConvertOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule CompareOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule WhereOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule MaskedFillOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
// The dropout mask is keyed by the global element index, so a split keeps
// every element's mask.
OpShardingRule DropoutOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}

/// Leading dimensions parallel; the last (normalised) dimension must be
/// whole, and the per-feature parameters share it.
static OpShardingRule getNormRule(Operation *op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  for (size_t d = 0; d + 1 < x.size(); ++d) {
    int64_t f = b.factor(x[d]);
    b.operand(0, d, f).result(0, d, f);
  }
  int64_t last = b.factor(x.back(), FactorKind::NeedReplication);
  b.operand(0, x.size() - 1, last).result(0, x.size() - 1, last);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    b.operand(i, 0, last);
  return b.rule;
}

OpShardingRule LayerNormOp::getShardingRule() { return getNormRule(*this); }
OpShardingRule RMSNormOp::getShardingRule() { return getNormRule(*this); }

OpShardingRule SoftmaxOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> x = getType().getShape();
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t f = b.factor(x[d], d == getDim() ? FactorKind::NeedReplication
                                             : FactorKind::Parallel);
    b.operand(0, d, f).result(0, d, f);
  }
  return b.rule;
}

// The angle depends on the global position and a feature pairs with the one
// D/2 away, so sequence and head_dim stay whole (the partitioner may lift the
// sequence restriction with a rank-dependent offset).
OpShardingRule RopeOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> x = getType().getShape();
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t f = b.factor(x[d], d >= 2 ? FactorKind::NeedReplication
                                      : FactorKind::Parallel);
    b.operand(0, d, f).result(0, d, f);
  }
  return b.rule;
}

// Query heads factor into (key/value head, query head within the group), so
// splitting heads keeps each query head with its key/value head. The key
// sequence is a softmax dimension and head_dim is contracted and produced:
// both stay whole. A causal query sequence needs global positions.
// `queryLike`/`keyLike` list the operands (false) and results (true) shaped
// like the query and like the key; for attention_grad the key/value
// gradients lack the query-group factor, so a split of it leaves partial
// sums there (each kv head sums its query heads).
static OpShardingRule
getAttentionRule(Operation *op, bool causal,
                 ArrayRef<std::pair<bool, unsigned>> queryLike,
                 ArrayRef<std::pair<bool, unsigned>> keyLike) {
  RuleBuilder b(op);
  ArrayRef<int64_t> q = shapeOf(op->getOperand(0));
  ArrayRef<int64_t> k = shapeOf(op->getOperand(1));
  int64_t batch = b.factor(q[0]);
  int64_t kvHeads = b.factor(k[1]);
  int64_t groupHeads = q[1] / k[1] > 1 ? b.factor(q[1] / k[1]) : -1;
  int64_t querySeq = b.factor(q[2], causal ? FactorKind::NeedReplication
                                           : FactorKind::Parallel);
  int64_t keySeq = b.factor(k[2], FactorKind::NeedReplication);
  int64_t headDim = b.factor(q[3], FactorKind::NeedReplication);
  auto add = [&](std::pair<bool, unsigned> tensor, int64_t d, int64_t f) {
    tensor.first ? b.result(tensor.second, d, f)
                 : b.operand(tensor.second, d, f);
  };
  for (auto tensor : queryLike) {
    add(tensor, 0, batch);
    add(tensor, 1, kvHeads);
    if (groupHeads >= 0)
      add(tensor, 1, groupHeads);
    add(tensor, 2, querySeq);
    add(tensor, 3, headDim);
  }
  for (auto tensor : keyLike) {
    add(tensor, 0, batch);
    add(tensor, 1, kvHeads);
    add(tensor, 2, keySeq);
    add(tensor, 3, headDim);
  }
  return b.rule;
}

OpShardingRule AttentionOp::getShardingRule() {
  // Operands q, k, v; result o.
  return getAttentionRule(*this, getCausal(), {{false, 0}, {true, 0}},
                          {{false, 1}, {false, 2}});
}

// A split vocabulary gives each rank the rows it owns and zeros elsewhere:
// partial sums (Megatron's vocab-parallel embedding).
OpShardingRule EmbeddingOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> table = shapeOf(getTable());
  ArrayRef<int64_t> ids = shapeOf(getIds());
  int64_t vocab = b.factor(table[0], FactorKind::Reduction);
  int64_t dim = b.factor(table[1]);
  b.operand(0, 0, vocab).operand(0, 1, dim);
  for (size_t d = 0; d < ids.size(); ++d) {
    int64_t f = b.factor(ids[d]);
    b.operand(1, d, f).result(0, d, f);
  }
  b.result(0, ids.size(), dim);
  return b.rule;
}

// Tokens are reduced into one mean: split tokens leave partial sums that the
// partitioner normalises by the global token count. The vocabulary needs the
// dedicated vocab-parallel rewrite, so by itself it stays whole.
OpShardingRule CrossEntropyOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  for (size_t d = 0; d + 1 < logits.size(); ++d) {
    int64_t f = b.factor(logits[d], FactorKind::Reduction);
    b.operand(0, d, f).operand(1, d, f);
  }
  b.operand(0, logits.size() - 1,
            b.factor(logits.back(), FactorKind::NeedReplication));
  return b.rule;
}

OpShardingRule ReshapeOp::getShardingRule() {
  OpShardingRule rule = makeEmptyShardingRule(*this);
  addReshapeFactors(rule, shapeOf(getInput()), getType().getShape(), 0, 0);
  return rule;
}

OpShardingRule TransposeOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<int64_t> factors;
  for (size_t d = 0; d < in.size(); ++d) {
    factors.push_back(b.factor(in[d]));
    b.operand(0, d, factors.back());
  }
  for (auto [d, p] : llvm::enumerate(getPermutation()))
    b.result(0, d, factors[p]);
  return b.rule;
}

OpShardingRule SliceOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t size = getLimits()[d] - getStarts()[d];
    if (size == in[d]) {
      int64_t f = b.factor(size);
      b.operand(0, d, f).result(0, d, f);
      continue;
    }
    b.operand(0, d, b.factor(in[d], FactorKind::NeedReplication));
    b.result(0, d, b.factor(size, FactorKind::NeedReplication));
  }
  return b.rule;
}

OpShardingRule SplitOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int64_t>(d) == static_cast<int64_t>(getDim())) {
      b.operand(0, d, b.factor(in[d], FactorKind::NeedReplication));
      for (auto [i, result] : llvm::enumerate(getResults()))
        b.result(i, d,
                 b.factor(shapeOf(result)[d], FactorKind::NeedReplication));
      continue;
    }
    int64_t f = b.factor(in[d]);
    b.operand(0, d, f);
    for (unsigned i = 0; i < getNumResults(); ++i)
      b.result(i, d, f);
  }
  return b.rule;
}

OpShardingRule ConcatOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> out = getType().getShape();
  for (size_t d = 0; d < out.size(); ++d) {
    if (static_cast<int64_t>(d) == static_cast<int64_t>(getDim())) {
      for (auto [i, input] : llvm::enumerate(getInputs()))
        b.operand(i, d,
                  b.factor(shapeOf(input)[d], FactorKind::NeedReplication));
      b.result(0, d, b.factor(out[d], FactorKind::NeedReplication));
      continue;
    }
    int64_t f = b.factor(out[d]);
    for (unsigned i = 0; i < getNumOperands(); ++i)
      b.operand(i, d, f);
    b.result(0, d, f);
  }
  return b.rule;
}

OpShardingRule BroadcastOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = getType().getShape();
  SmallVector<int64_t> factorOfResultDim(out.size(), -1);
  for (auto [i, d] : llvm::enumerate(getDims())) {
    // A dimension that keeps its size is the same loop; a size-1 dimension
    // that is repeated takes no factor.
    if (in[i] == out[d]) {
      factorOfResultDim[d] = b.factor(out[d]);
      b.operand(0, i, factorOfResultDim[d]);
    }
  }
  for (size_t d = 0; d < out.size(); ++d)
    b.result(0, d, factorOfResultDim[d] >= 0 ? factorOfResultDim[d]
                                             : b.factor(out[d]));
  return b.rule;
}

// Split sum/mean dimensions leave partial sums (a mean is rescaled by the
// partitioner); a split max/min dimension would need a max-reduction, which
// partial values do not express, so it stays whole.
OpShardingRule ReduceOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  FactorKind reducedKind =
      getKind() == ReductionKind::Sum || getKind() == ReductionKind::Mean
          ? FactorKind::Reduction
          : FactorKind::NeedReplication;
  int64_t resultDim = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = llvm::is_contained(getDims(), static_cast<int64_t>(d));
    int64_t f = b.factor(in[d], reduced ? reducedKind : FactorKind::Parallel);
    b.operand(0, d, f);
    if (!reduced)
      b.result(0, resultDim++, f);
    else if (getKeepdim())
      ++resultDim;
  }
  return b.rule;
}

//===----------------------------------------------------------------------===//
// Backward-pass and optimizer ops
//===----------------------------------------------------------------------===//

OpShardingRule UnaryGradOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule AdamWUpdateOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}
OpShardingRule SGDUpdateOp::getShardingRule() {
  return getElementwiseShardingRule(*this);
}

/// x, dy and dx share every dimension; the per-feature results (dscale,
/// dbias) keep only the normalised one, so split leading dimensions leave
/// partial sums in them.
static OpShardingRule getNormGradRule(Operation *op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
  size_t last = x.size() - 1;
  for (size_t d = 0; d < last; ++d) {
    int64_t f = b.factor(x[d]);
    b.operand(0, d, f).operand(2, d, f).result(0, d, f);
  }
  int64_t feature = b.factor(x.back(), FactorKind::NeedReplication);
  b.operand(0, last, feature).operand(1, 0, feature).operand(2, last, feature);
  b.result(0, last, feature);
  for (unsigned i = 1; i < op->getNumResults(); ++i)
    b.result(i, 0, feature);
  return b.rule;
}

OpShardingRule LayerNormGradOp::getShardingRule() {
  return getNormGradRule(*this);
}
OpShardingRule RMSNormGradOp::getShardingRule() {
  return getNormGradRule(*this);
}

OpShardingRule SoftmaxGradOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> y = shapeOf(getResult());
  for (size_t d = 0; d < y.size(); ++d) {
    int64_t f = b.factor(y[d], d == getDim() ? FactorKind::NeedReplication
                                             : FactorKind::Parallel);
    b.operand(0, d, f).operand(1, d, f).result(0, d, f);
  }
  return b.rule;
}

OpShardingRule RopeGradOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> x = shapeOf(getResultGrad());
  for (size_t d = 0; d < x.size(); ++d) {
    int64_t f = b.factor(x[d], d >= 2 ? FactorKind::NeedReplication
                                      : FactorKind::Parallel);
    b.operand(0, d, f).result(0, d, f);
  }
  return b.rule;
}

OpShardingRule AttentionGradOp::getShardingRule() {
  // Operands q, k, v, dout; results dq, dk, dv.
  return getAttentionRule(*this, getCausal(),
                          {{false, 0}, {false, 3}, {true, 0}},
                          {{false, 1}, {false, 2}, {true, 1}, {true, 2}});
}

OpShardingRule EmbeddingGradOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> ids = shapeOf(getIds());
  ArrayRef<int64_t> table = shapeOf(getTableGrad());
  // The positions are summed into the table rows: reduction factors.
  for (size_t d = 0; d < ids.size(); ++d) {
    int64_t f = b.factor(ids[d], FactorKind::Reduction);
    b.operand(0, d, f).operand(1, d, f);
  }
  int64_t dim = b.factor(table[1]);
  b.operand(1, ids.size(), dim);
  b.result(0, 0, b.factor(table[0])).result(0, 1, dim);
  return b.rule;
}

// Tokens are independent rows; the mean's denominator counts every token,
// so rtx-partition rescales a split by 1/k. The vocabulary stays whole.
OpShardingRule CrossEntropyGradOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  for (size_t d = 0; d < logits.size(); ++d) {
    int64_t f = b.factor(logits[d], d + 1 < logits.size()
                                        ? FactorKind::Parallel
                                        : FactorKind::NeedReplication);
    b.operand(0, d, f).result(0, d, f);
    if (d + 1 < logits.size())
      b.operand(1, d, f);
  }
  return b.rule;
}

OpShardingRule PadOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = getType().getShape();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[d]) {
      int64_t f = b.factor(in[d]);
      b.operand(0, d, f).result(0, d, f);
      continue;
    }
    b.operand(0, d, b.factor(in[d], FactorKind::NeedReplication));
    b.result(0, d, b.factor(out[d], FactorKind::NeedReplication));
  }
  return b.rule;
}
