//===- RTXCost.cpp - FLOP counts of the model ops -------------------------===//
//
// CostOpInterface::getFlops for every model op that is not generated from an
// ODS class. Conventions: a multiply-add is 2 FLOPs; data movement (reshape,
// transpose, slice, gather) is 0 FLOPs and shows up in getBytesAccessed.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rtx;

static int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

int64_t ParamOp::getFlops() { return 0; }
int64_t InputOp::getFlops() { return 0; }
int64_t ConstantOp::getFlops() { return 0; }

/// 2 * (result elements) * K for `[B..., M, K] x [B..., K, N]`.
static int64_t getContractionFlops(Value lhs, Value result, bool transposeLhs) {
  ArrayRef<int64_t> a = cast<RankedTensorType>(lhs.getType()).getShape();
  int64_t k = transposeLhs ? a[a.size() - 2] : a.back();
  return 2 * numElements(result) * k;
}

int64_t MatmulOp::getFlops() {
  return getContractionFlops(getLhs(), getResult(), getTransposeLhs());
}
int64_t BatchMatmulOp::getFlops() {
  return getContractionFlops(getLhs(), getResult(), getTransposeLhs());
}

int64_t LinearOp::getFlops() {
  int64_t in = cast<RankedTensorType>(getWeight().getType()).getDimSize(1);
  int64_t out = numElements(getResult());
  return 2 * out * in + (getBias() ? out : 0);
}

// The product, then per result element 8 for a GELU (or its derivative)
// and 1 for a bias; a bias gradient adds one per lhs element.
int64_t GemmEpilogueOp::getFlops() {
  int64_t flops = getContractionFlops(getLhs(), getResult(), getTransposeLhs());
  int64_t elements = numElements(getResult());
  if (getEpilogue() == GemmEpilogue::BiasGrad)
    return flops + numElements(getLhs());
  return flops + 8 * elements + (getBias() ? elements : 0);
}

// The tanh form costs about as much as the erf form: 8 per element.
int64_t GeluOp::getFlops() { return 8 * numElements(getResult()); }
int64_t ConvertOp::getFlops() { return 0; }
int64_t CompareOp::getFlops() { return numElements(getResult()); }
int64_t WhereOp::getFlops() { return 0; }
int64_t MaskedFillOp::getFlops() { return 0; }
int64_t DropoutOp::getFlops() { return 2 * numElements(getResult()); }

int64_t LayerNormOp::getFlops() {
  return (7 + (getBias() ? 1 : 0)) * numElements(getResult());
}
int64_t RMSNormOp::getFlops() { return 5 * numElements(getResult()); }
int64_t SoftmaxOp::getFlops() { return 5 * numElements(getResult()); }
int64_t RopeOp::getFlops() { return 3 * numElements(getResult()); }

int64_t AttentionOp::getFlops() {
  ArrayRef<int64_t> q = cast<RankedTensorType>(getQuery().getType()).getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(getKey().getType()).getShape();
  int64_t pairs = getCausal() ? q[2] * (q[2] + 1) / 2 : q[2] * k[2];
  int64_t scores = q[0] * q[1] * pairs;
  return 4 * scores * q[3] + 5 * scores;
}

int64_t EmbeddingOp::getFlops() { return 0; }
int64_t CrossEntropyOp::getFlops() { return 6 * numElements(getLogits()); }

int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t BroadcastOp::getFlops() { return 0; }
int64_t ReduceOp::getFlops() { return numElements(getInput()); }

int64_t UnaryGradOp::getFlops() { return 6 * numElements(getInputGrad()); }
int64_t LayerNormGradOp::getFlops() { return 14 * numElements(getInput()); }
int64_t RMSNormGradOp::getFlops() { return 10 * numElements(getInput()); }
int64_t SoftmaxGradOp::getFlops() { return 4 * numElements(getResult()); }
int64_t RopeGradOp::getFlops() { return 3 * numElements(getResultGrad()); }
int64_t AttentionGradOp::getFlops() {
  ArrayRef<int64_t> q = cast<RankedTensorType>(getQuery().getType()).getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(getKey().getType()).getShape();
  int64_t pairs = getCausal() ? q[2] * (q[2] + 1) / 2 : q[2] * k[2];
  int64_t scores = q[0] * q[1] * pairs;
  return 2 * (4 * scores * q[3] + 5 * scores);
}
int64_t EmbeddingGradOp::getFlops() { return numElements(getResultGrad()); }
int64_t CrossEntropyGradOp::getFlops() { return 5 * numElements(getLogits()); }
int64_t PadOp::getFlops() { return 0; }
int64_t AdamWUpdateOp::getFlops() { return 12 * numElements(getParam()); }
int64_t SGDUpdateOp::getFlops() { return 3 * numElements(getParam()); }

/// {M, N, K} of `[B..., M, K] x [B..., K, N]` (after the transposes), with
/// the batch dimensions folded into M.
static SmallVector<int64_t, 3> contractionShape(Value lhs, Value result,
                                                bool transposeLhs) {
  ArrayRef<int64_t> a = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> c = cast<RankedTensorType>(result.getType()).getShape();
  int64_t k = transposeLhs ? a[a.size() - 2] : a.back();
  int64_t n = c.back();
  return {numElements(result) / std::max<int64_t>(n, 1), n, k};
}

SmallVector<int64_t, 3> GemmEpilogueOp::getContractionShape() {
  return contractionShape(getLhs(), getResult(), getTransposeLhs());
}
bool GemmEpilogueOp::isContractionLhsTransposed() { return getTransposeLhs(); }

/// Attention's products: scores = q k^T ([S, D] x [D, S_k]) and out = p v
/// ([S, S_k] x [S_k, D]), once per batch element and head: the shape of the
/// GEMMs the kernels run is {S, S_k, D}, B x H times each (their rate is that
/// of a product of this size, not of one B H times larger).
static SmallVector<int64_t, 3> attentionShape(Value query, Value key) {
  ArrayRef<int64_t> q = cast<RankedTensorType>(query.getType()).getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(key.getType()).getShape();
  return {q[2], k[2], q[3]};
}

bool mlir::rtx::isDefaultContractionLhsTransposed(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<MatmulOp, BatchMatmulOp>(
          [](auto op) { return op.getTransposeLhs(); })
      .Default([](Operation *) { return false; });
}

SmallVector<int64_t, 3> mlir::rtx::getDefaultContractionShape(Operation *op) {
  return llvm::TypeSwitch<Operation *, SmallVector<int64_t, 3>>(op)
      .Case<MatmulOp, BatchMatmulOp>([](auto op) {
        return contractionShape(op.getLhs(), op.getResult(),
                                op.getTransposeLhs());
      })
      .Case([](LinearOp op) {
        int64_t in =
            cast<RankedTensorType>(op.getWeight().getType()).getDimSize(1);
        int64_t out =
            cast<RankedTensorType>(op.getWeight().getType()).getDimSize(0);
        return SmallVector<int64_t, 3>{numElements(op.getResult()) /
                                           std::max<int64_t>(out, 1),
                                       out, in};
      })
      .Case<AttentionOp, AttentionGradOp>(
          [](auto op) { return attentionShape(op.getQuery(), op.getKey()); })
      .Default([](Operation *) { return SmallVector<int64_t, 3>{}; });
}

int64_t AddLayerNormOp::getFlops() {
  return (getBias() ? 9 : 8) * numElements(getResult());
}
int64_t AddRMSNormOp::getFlops() { return 6 * numElements(getResult()); }
int64_t CrossEntropyWithGradOp::getFlops() {
  return 11 * numElements(getLogits());
}
int64_t MultiAdamWUpdateOp::getFlops() {
  int64_t flops = 0;
  for (Value param : getParams())
    flops += 12 * numElements(param);
  return flops;
}
int64_t SumSquaresOp::getFlops() {
  int64_t flops = 0;
  for (Value input : getInputs())
    flops += 2 * numElements(input);
  return flops;
}
