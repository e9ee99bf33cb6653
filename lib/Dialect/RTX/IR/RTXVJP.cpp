//===- RTXVJP.cpp - vector-Jacobian products of the forward ops -----------===//
//
// VJPOpInterface::buildVJP for every differentiable op: given the gradients of
// an op's results (null where a result has none), build the gradients of its
// operands at the builder's insertion point (null for operands that are not
// differentiable: indices, masks). Most are short compositions of forward
// ops; normalisations, attention and the loss use the dedicated gradient ops.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// Small builders shared by the VJPs.
struct VJPBuilder {
  VJPBuilder(OpBuilder &b, Operation *op) : b(b), loc(op->getLoc()) {}

  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  Value splat(RankedTensorType type, double value) {
    Type element = type.getElementType();
    Attribute attr = isa<FloatType>(element)
                         ? Attribute(b.getFloatAttr(element, value))
                         : Attribute(b.getIntegerAttr(element, (int64_t)value));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
  }
  Value zerosLike(Value v) { return splat(typeOf(v), 0.0); }
  Value neg(Value v) { return NegOp::create(b, loc, v); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, typeOf(v).getElementType());
    if (type == v.getType())
      return v;
    return ReshapeOp::create(b, loc, type, v);
  }
  Value matmul(Value x, Value y, bool tx, bool ty, RankedTensorType type) {
    return MatmulOp::create(b, loc, type, x, y, tx, ty);
  }
  Value batchMatmul(Value x, Value y, bool tx, bool ty, RankedTensorType type) {
    return BatchMatmulOp::create(b, loc, type, x, y, tx, ty);
  }
  Value unaryGrad(UnaryFn fn, Value x, Value dy) {
    return UnaryGradOp::create(b, loc, fn, x, dy);
  }
  /// Sums `v` over `dims` (removed).
  Value sum(Value v, ArrayRef<int64_t> dims) {
    if (dims.empty())
      return v;
    SmallVector<int64_t> shape;
    ArrayRef<int64_t> in = typeOf(v).getShape();
    for (int64_t d = 0; d < (int64_t)in.size(); ++d)
      if (!llvm::is_contained(dims, d))
        shape.push_back(in[d]);
    auto type = RankedTensorType::get(shape, typeOf(v).getElementType());
    return ReduceOp::create(b, loc, type, ReductionKind::Sum, v,
                            b.getDenseI64ArrayAttr(dims), false);
  }
  /// Broadcasts `v` (same rank as `type`, sizes equal or 1) to `type`.
  Value expand(Value v, RankedTensorType type) {
    if (v.getType() == type)
      return v;
    SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    return BroadcastOp::create(b, loc, type, v, b.getDenseI64ArrayAttr(dims));
  }

  OpBuilder &b;
  Location loc;
};

/// Element type of `v` matches `like`'s: the gradient of a value has the
/// value's type.
bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}
} // namespace

/// Shared by the ops without differentiable operands.
static LogicalResult noOperandGrads(Operation *op,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  return success();
}

LogicalResult ParamOp::buildVJP(OpBuilder &, ValueRange,
                                SmallVectorImpl<Value> &grads) {
  return noOperandGrads(*this, grads);
}
LogicalResult InputOp::buildVJP(OpBuilder &, ValueRange,
                                SmallVectorImpl<Value> &grads) {
  return noOperandGrads(*this, grads);
}
LogicalResult ConstantOp::buildVJP(OpBuilder &, ValueRange,
                                   SmallVectorImpl<Value> &grads) {
  return noOperandGrads(*this, grads);
}
LogicalResult CompareOp::buildVJP(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &grads) {
  return noOperandGrads(*this, grads);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// C = op(A) op(B) with op a transpose of the last two dimensions when the
/// flag is set. Each case writes dA and dB as one product, without explicit
/// transposes.
static void contractionVJP(VJPBuilder &v, Value a, Value bv, Value dc, bool ta,
                           bool tb, bool batched,
                           SmallVectorImpl<Value> &grads) {
  auto product = [&](Value x, Value y, bool tx, bool ty, Value like) {
    return batched ? v.batchMatmul(x, y, tx, ty, v.typeOf(like))
                   : v.matmul(x, y, tx, ty, v.typeOf(like));
  };
  Value da, db;
  if (!ta && !tb) {
    da = product(dc, bv, false, true, a); // dC B^T
    db = product(a, dc, true, false, bv); // A^T dC
  } else if (ta && !tb) {
    da = product(bv, dc, false, true, a);  // B dC^T
    db = product(a, dc, false, false, bv); // A dC
  } else if (!ta && tb) {
    da = product(dc, bv, false, false, a); // dC B
    db = product(dc, a, true, false, bv);  // dC^T A
  } else {
    da = product(bv, dc, true, true, a); // B^T dC^T
    db = product(dc, a, true, true, bv); // dC^T A^T
  }
  grads.assign({da, db});
}

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  contractionVJP(v, getLhs(), getRhs(), dys[0], getTransposeLhs(),
                 getTransposeRhs(), false, grads);
  return success();
}

LogicalResult BatchMatmulOp::buildVJP(OpBuilder &b, ValueRange dys,
                                      SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  contractionVJP(v, getLhs(), getRhs(), dys[0], getTransposeLhs(),
                 getTransposeRhs(), true, grads);
  return success();
}

// y = x W^T + b over the last dimension: flatten the leading dimensions to
// T, then dx = dy W, dW = dy^T x, db = sum_T dy.
LogicalResult LinearOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  ArrayRef<int64_t> x = v.typeOf(getInput()).getShape();
  ArrayRef<int64_t> w = v.typeOf(getWeight()).getShape();
  int64_t tokens = 1;
  for (int64_t d : x.drop_back())
    tokens *= d;
  Type element = v.typeOf(getInput()).getElementType();
  Value dy2 = v.reshape(dys[0], {tokens, w[0]});
  Value x2 = v.reshape(getInput(), {tokens, w[1]});
  Value dx2 = v.matmul(dy2, getWeight(), false, false,
                       RankedTensorType::get({tokens, w[1]}, element));
  Value dx = v.reshape(dx2, x);
  Value dw = v.matmul(dy2, x2, true, false, v.typeOf(getWeight()));
  grads.assign({dx, dw});
  if (getBias())
    grads.push_back(v.sum(dy2, {0}));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &, ValueRange dys,
                              SmallVectorImpl<Value> &grads) {
  grads.assign({dys[0], dys[0]});
  return success();
}
LogicalResult SubOp::buildVJP(OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  grads.assign({dys[0], v.neg(dys[0])});
  return success();
}
LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  grads.assign({v.mul(dys[0], getRhs()), v.mul(dys[0], getLhs())});
  return success();
}
// d(a/b) = da / b - db * a / b^2 = da / b - db * (a/b) / b.
LogicalResult DivOp::buildVJP(OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  Value da = v.div(dys[0], getRhs());
  Value db = v.neg(v.mul(da, getResult()));
  grads.assign({da, db});
  return success();
}
/// max/min: the gradient goes to the operand that was selected (lhs on
/// ties, as for a select on `lhs >= rhs`).
static LogicalResult selectVJP(OpBuilder &b, Operation *op,
                               ComparePredicate predicate, Value dy,
                               SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, op);
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto maskType =
      RankedTensorType::get(v.typeOf(lhs).getShape(), b.getI1Type());
  Value mask = CompareOp::create(b, v.loc, maskType, predicate, lhs, rhs);
  Value zeros = v.zerosLike(dy);
  grads.assign({WhereOp::create(b, v.loc, mask, dy, zeros),
                WhereOp::create(b, v.loc, mask, zeros, dy)});
  return success();
}
LogicalResult MaximumOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  return selectVJP(b, *this, ComparePredicate::GE, dys[0], grads);
}
LogicalResult MinimumOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  return selectVJP(b, *this, ComparePredicate::LE, dys[0], grads);
}

LogicalResult NegOp::buildVJP(OpBuilder &b, ValueRange dys,
                              SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  grads.assign({v.neg(dys[0])});
  return success();
}

#define RTX_UNARY_VJP(OpClass, Fn)                                             \
  LogicalResult OpClass::buildVJP(OpBuilder &b, ValueRange dys,                \
                                  SmallVectorImpl<Value> &grads) {             \
    VJPBuilder v(b, *this);                                                    \
    grads.assign({v.unaryGrad(UnaryFn::Fn, getInput(), dys[0])});              \
    return success();                                                          \
  }
RTX_UNARY_VJP(ExpOp, Exp)
RTX_UNARY_VJP(LogOp, Log)
RTX_UNARY_VJP(SqrtOp, Sqrt)
RTX_UNARY_VJP(RsqrtOp, Rsqrt)
RTX_UNARY_VJP(TanhOp, Tanh)
RTX_UNARY_VJP(SigmoidOp, Sigmoid)
RTX_UNARY_VJP(ReluOp, Relu)
RTX_UNARY_VJP(SiluOp, Silu)
#undef RTX_UNARY_VJP

// y = silu(g) * u: dg = silu'(g) * (dy * u), du = dy * silu(g).
LogicalResult SwiGLUOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  Value silu = SiluOp::create(b, v.loc, getGate());
  grads.assign({v.unaryGrad(UnaryFn::Silu, getGate(), v.mul(dys[0], getUp())),
                v.mul(dys[0], silu)});
  return success();
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange dys,
                               SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  grads.assign(
      {v.unaryGrad(getApproximate() ? UnaryFn::GeluTanh : UnaryFn::Gelu,
                   getInput(), dys[0])});
  return success();
}

LogicalResult ConvertOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  grads.assign({ConvertOp::create(b, getLoc(), getInput().getType(), dys[0])});
  return success();
}

LogicalResult WhereOp::buildVJP(OpBuilder &b, ValueRange dys,
                                SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  Value zeros = v.zerosLike(dys[0]);
  grads.assign({Value(),
                (Value)WhereOp::create(b, v.loc, getCondition(), dys[0], zeros),
                WhereOp::create(b, v.loc, getCondition(), zeros, dys[0])});
  return success();
}

LogicalResult MaskedFillOp::buildVJP(OpBuilder &b, ValueRange dys,
                                     SmallVectorImpl<Value> &grads) {
  grads.assign({MaskedFillOp::create(b, getLoc(), dys[0], getMask(),
                                     b.getF64FloatAttr(0.0)),
                Value()});
  return success();
}

// The mask is a function of (seed, element index), so dropping the gradient
// with the same rate and seed applies the same mask and scale.
LogicalResult DropoutOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  auto dropout =
      DropoutOp::create(b, getLoc(), dys[0], getRateAttr(), getSeedAttr());
  if (Attribute sharding = (*this)->getAttr(RTXDialect::getShardingAttrName()))
    dropout->setAttr(RTXDialect::getShardingAttrName(), sharding);
  grads.assign({dropout});
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, attention
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  auto grad = LayerNormGradOp::create(b, getLoc(), getInput(), getScale(),
                                      dys[0], getEpsilonAttr());
  grads.assign({grad.getInputGrad(), grad.getScaleGrad()});
  if (getBias())
    grads.push_back(grad.getBiasGrad());
  return success();
}

LogicalResult RMSNormOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  auto grad = RMSNormGradOp::create(b, getLoc(), getInput(), getScale(), dys[0],
                                    getEpsilonAttr());
  grads.assign({grad.getInputGrad(), grad.getScaleGrad()});
  return success();
}

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  grads.assign(
      {SoftmaxGradOp::create(b, getLoc(), getResult(), dys[0], getDimAttr())});
  return success();
}

LogicalResult RopeOp::buildVJP(OpBuilder &b, ValueRange dys,
                               SmallVectorImpl<Value> &grads) {
  grads.assign({RopeGradOp::create(b, getLoc(), dys[0], getThetaAttr(),
                                   getOffsetAttr())});
  return success();
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  auto grad =
      AttentionGradOp::create(b, getLoc(), getQuery(), getKey(), getValue(),
                              dys[0], getCausalAttr(), getScaleAttr());
  grads.assign({grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.assign(
      {EmbeddingGradOp::create(b, getLoc(), getTable().getType(), getIds(),
                               dys[0], getVocabMeshAttr(), getVocabAxesAttr()),
       Value()});
  return success();
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange dys,
                                       SmallVectorImpl<Value> &grads) {
  grads.assign(
      {CrossEntropyGradOp::create(b, getLoc(), getLogits(), getLabels(), dys[0],
                                  getIgnoreIndexAttr()),
       Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  grads.assign({ReshapeOp::create(b, getLoc(), getInput().getType(), dys[0])});
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  grads.assign({TransposeOp::create(b, getLoc(), getInput().getType(), dys[0],
                                    b.getDenseI64ArrayAttr(inverse))});
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ValueRange dys,
                                SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  ArrayRef<int64_t> in =
      cast<RankedTensorType>(getInput().getType()).getShape();
  SmallVector<int64_t> high;
  for (auto [size, limit] : llvm::zip(in, getLimits()))
    high.push_back(size - limit);
  grads.assign({PadOp::create(b, getLoc(), getInput().getType(), dys[0],
                              getStartsAttr(), b.getDenseI64ArrayAttr(high))});
  return success();
}

LogicalResult SplitOp::buildVJP(OpBuilder &b, ValueRange dys,
                                SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  VJPBuilder v(b, *this);
  SmallVector<Value> pieces;
  for (auto [result, dy] : llvm::zip(getResults(), dys))
    pieces.push_back(dy ? dy : v.zerosLike(result));
  grads.assign({ConcatOp::create(b, getLoc(), getInput().getType(), pieces,
                                 getDimAttr())});
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getResult()))
    return noOperandGrads(*this, grads);
  auto split = SplitOp::create(b, getLoc(), getInputs().getTypes(), dys[0],
                               getDimAttr());
  grads.assign(split.getResults().begin(), split.getResults().end());
  return success();
}

// Sum over the dimensions the broadcast created or expanded from size 1,
// then restore the operand's shape.
LogicalResult BroadcastOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    SmallVectorImpl<Value> &grads) {
  if (!isFloatTensor(getInput()))
    return noOperandGrads(*this, grads);
  VJPBuilder v(b, *this);
  ArrayRef<int64_t> in = v.typeOf(getInput()).getShape();
  ArrayRef<int64_t> out = getType().getShape();
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < (int64_t)out.size(); ++d) {
    const auto *it = llvm::find(getDims(), d);
    if (it == getDims().end() || in[it - getDims().begin()] != out[d])
      summed.push_back(d);
  }
  grads.assign({v.reshape(v.sum(dys[0], summed), in)});
  return success();
}

LogicalResult ReduceOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 SmallVectorImpl<Value> &grads) {
  VJPBuilder v(b, *this);
  RankedTensorType inType = v.typeOf(getInput());
  // The result with the reduced dimensions kept as size 1.
  SmallVector<int64_t> kept(inType.getShape());
  for (int64_t d : getDims())
    kept[d] = 1;
  Value dy = v.expand(v.reshape(dys[0], kept), inType);
  switch (getKind()) {
  case ReductionKind::Sum:
    grads.assign({dy});
    break;
  case ReductionKind::Mean: {
    int64_t count = 1;
    for (int64_t d : getDims())
      count *= inType.getDimSize(d);
    grads.assign(
        {v.mul(dy, v.splat(inType, 1.0 / static_cast<double>(count)))});
    break;
  }
  case ReductionKind::Max:
  case ReductionKind::Min: {
    // Every element equal to the extremum receives the gradient.
    Value extremum = v.expand(v.reshape(getResult(), kept), inType);
    auto maskType = RankedTensorType::get(inType.getShape(), b.getI1Type());
    Value mask = CompareOp::create(b, v.loc, maskType, ComparePredicate::EQ,
                                   getInput(), extremum);
    grads.assign({WhereOp::create(b, v.loc, mask, dy, v.zerosLike(dy))});
    break;
  }
  }
  return success();
}
