//===- Kernels.h - CPU kernels for the rtx ops ------------------*- C++ -*-===//
//
// One function per op of the rtx dialect: the forward ops, whose semantics are
// those of the op descriptions in include/rtx/Dialect/RTX/IR/RTXModelOps.td,
// and the backward and optimizer ops of RTXGradientOps.td. Float kernels
// accept f32, f64, bf16 and f16: f64 computes in double, the others in float
// (bf16/f16 results are rounded to nearest even). Reductions run in a fixed
// order, so results do not depend on the thread count. Kernels throw
// rtxrt::Error with a message naming the op on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELS_H
#define RTXRT_KERNELS_H

#include "rtxrt/Tensor.h"

#include <string>
#include <vector>

namespace rtxrt {

enum class UnaryKind {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Silu,
  Gelu,
  GeluTanh
};
enum class BinaryKind { Add, Sub, Mul, Div, Maximum, Minimum };
enum class CompareKind { EQ, NE, LT, LE, GT, GE };
enum class ReduceKind { Sum, Mean, Max, Min };
enum class InitKind { Zeros, Ones, Constant, Normal, Uniform };
/// The functions of rtx.unary_grad, in the order of the ODS enum RTX_UnaryFn.
enum class UnaryFn {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Silu,
  Gelu,
  GeluTanh
};

// --- contractions ------------------------------------------------------------
/// [M,K] x [K,N] (after optional transposes); OpenBLAS sgemm/dgemm.
Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);
/// [B...,M,K] x [B...,K,N].
Tensor batchMatmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs);
/// x [..., in], weight [out, in], optional bias [out] (pass an undefined
/// Tensor for none) -> [..., out].
Tensor linear(const Tensor &input, const Tensor &weight, const Tensor &bias);

// --- elementwise -------------------------------------------------------------
Tensor unary(UnaryKind kind, const Tensor &input);
/// Operands of one shape and dtype.
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);
/// -> i1 tensor.
Tensor compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs);
/// condition i1; onTrue/onFalse of one shape and dtype.
Tensor where(const Tensor &condition, const Tensor &onTrue,
             const Tensor &onFalse);
Tensor maskedFill(const Tensor &input, const Tensor &mask, double value);
Tensor convert(const Tensor &input, DType to);
/// Mask bit of global element i is drawn from the counter-based generator
/// keyed by (seed, "dropout", globalIndex(i)); `globalOffsets`/`globalShape`
/// place this (possibly sharded) tensor inside the global tensor: element
/// local index -> global row-major index. Empty globalShape means the tensor
/// is the whole tensor.
Tensor dropout(const Tensor &input, double rate, int64_t seed,
               const Shape &globalShape = {},
               const std::vector<int64_t> &globalOffsets = {});

// --- normalisation, softmax, attention ---------------------------------------
/// scale [D], optional bias [D] (undefined Tensor for none).
Tensor layerNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 double epsilon);
Tensor rmsNorm(const Tensor &input, const Tensor &scale, double epsilon);
Tensor softmax(const Tensor &input, int64_t dim);
/// input [B,H,S,D]; rotate-half layout; position s + offset.
Tensor rope(const Tensor &input, double theta, int64_t offset);
/// q [B,Hq,Sq,D], k/v [B,Hkv,Skv,D] -> [B,Hq,Sq,D].
Tensor attention(const Tensor &query, const Tensor &key, const Tensor &value,
                 bool causal, double scale);

// --- embedding and loss ------------------------------------------------------
/// table [V,D], integer ids -> ids.shape + [D]. An id outside [0, V) throws.
Tensor embedding(const Tensor &table, const Tensor &ids);
/// logits [..., V], integer labels [...] -> f32 scalar (f64 for f64 logits):
/// mean over non-ignored tokens; 0 when all are ignored.
Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    bool hasIgnoreIndex, int64_t ignoreIndex);

// Vocab-parallel pieces (Megatron): `table` / `logits` hold the rows /
// classes [offset, offset + V_local) of a vocabulary of `vocab` entries.
/// embedding over a vocabulary shard: ids outside the shard give zero rows,
/// so the shards' results add up to the whole lookup. Ids outside
/// [0, vocab) throw.
Tensor embedding(const Tensor &table, const Tensor &ids, int64_t offset,
                 int64_t vocab);
/// Per token of a logits shard [..., V_local]: {the shard's maximum, the
/// label's logit when this shard owns the label, else 0}. Ignored labels
/// give 0; labels outside [0, vocab) throw.
std::vector<Tensor> vocabLogitStats(const Tensor &logits, const Tensor &labels,
                                    int64_t offset, int64_t vocab,
                                    bool hasIgnoreIndex, int64_t ignoreIndex);
/// The cross-entropy from global per-token statistics: the mean over
/// non-ignored tokens of max + log(sumExp) - labelLogit (0 when all are
/// ignored). Scalar of the statistics' compute type (f64 for f64).
Tensor vocabCrossEntropy(const Tensor &max, const Tensor &sumExp,
                         const Tensor &labelLogit, const Tensor &labels,
                         bool hasIgnoreIndex, int64_t ignoreIndex);

// --- shape manipulation ------------------------------------------------------
Tensor reshape(const Tensor &input, const Shape &shape);
Tensor transpose(const Tensor &input, const std::vector<int64_t> &permutation);
Tensor slice(const Tensor &input, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits);
std::vector<Tensor> split(const Tensor &input, int64_t dim,
                          const std::vector<int64_t> &sizes);
Tensor concat(const std::vector<Tensor> &inputs, int64_t dim);
/// Operand dim i -> result dim dims[i] (size equal or 1).
Tensor broadcast(const Tensor &input, const std::vector<int64_t> &dims,
                 const Shape &resultShape);
Tensor reduce(ReduceKind kind, const Tensor &input,
              const std::vector<int64_t> &dims, bool keepdim);

// --- initialisation ----------------------------------------------------------
/// A parameter's initial value: element i (row-major over globalShape) is
/// drawn from the counter-based generator keyed by (seed, name, i), so any
/// shard of it can be produced alone: `globalOffsets` gives the shard's
/// origin in the global tensor (empty: the whole tensor).
Tensor initParameter(const std::string &name, InitKind kind, double a, double b,
                     int64_t seed, const Shape &shape, DType dtype,
                     const Shape &globalShape = {},
                     const std::vector<int64_t> &globalOffsets = {});

// --- backward ----------------------------------------------------------------
// Vector-Jacobian products of the forward kernels above: given the forward
// operands and the gradient of the result (`resultGrad`, same shape and dtype
// as the result), the gradients of the operands. Sums over many elements
// (scale/bias gradients, grouped key/value heads, the embedding scatter-add)
// run in a fixed order, so they do not depend on the thread count either.

/// dy * f'(x). relu' is 1 for x > 0 and 0 otherwise (NaN for NaN x); gelu is
/// the exact GELU, gelu_tanh its tanh approximation.
Tensor unaryGrad(UnaryFn fn, const Tensor &input, const Tensor &resultGrad);
/// Returns {dx, dscale, dbias}; dbias = sum of dy over the leading dims (the
/// layernorm's bias, if any, does not change the other two). Mean and
/// (biased) variance are recomputed.
std::vector<Tensor> layerNormGrad(const Tensor &input, const Tensor &scale,
                                  const Tensor &resultGrad, double epsilon);
/// Returns {dx, dscale}.
std::vector<Tensor> rmsNormGrad(const Tensor &input, const Tensor &scale,
                                const Tensor &resultGrad, double epsilon);
/// From the softmax output y: dx = y * (dy - sum(dy * y, dim)).
Tensor softmaxGrad(const Tensor &result, const Tensor &resultGrad, int64_t dim);
/// The inverse rotation of rope (same layout: [B,H,S,D], rotate-half).
Tensor ropeGrad(const Tensor &resultGrad, double theta, int64_t offset);
/// Returns {dq, dk, dv}. The probabilities are recomputed; with grouped
/// key/value heads, dk and dv sum over the query heads of the group.
std::vector<Tensor> attentionGrad(const Tensor &query, const Tensor &key,
                                  const Tensor &value, const Tensor &resultGrad,
                                  bool causal, double scale);
/// Scatter-add in a fixed order: dtable[v, :] = sum over positions p with
/// ids[p] == v, in increasing p, of dy[p, :]. tableShape = [V, D];
/// resultGrad is ids.shape + [D]; the result has resultGrad's dtype. An id
/// outside [0, V) throws an Error naming the id.
Tensor embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                     const Shape &tableShape);
/// dlogits[t, :] = dloss * (softmax(logits[t, :]) - onehot(labels[t])) / n
/// over the n non-ignored tokens, zero rows for ignored ones (all zeros when
/// n = 0). lossGrad is a float scalar; the result has the logits' dtype.
Tensor crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                        const Tensor &lossGrad, bool hasIgnoreIndex,
                        int64_t ignoreIndex);
/// embeddingGrad over a vocabulary shard (see embedding above): tableShape is
/// the shard's [V_local, D]; positions whose id the shard does not own
/// contribute nothing.
Tensor embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                     const Shape &tableShape, int64_t offset, int64_t vocab);
/// crossEntropyGrad on a logits shard, given the global per-token max and
/// sum of exp(logit - max): the shard's columns of dloss * (softmax -
/// onehot) / n.
Tensor vocabCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                             const Tensor &lossGrad, const Tensor &max,
                             const Tensor &sumExp, int64_t offset,
                             int64_t vocab, bool hasIgnoreIndex,
                             int64_t ignoreIndex);
/// low[d] zeros before and high[d] zeros after dimension d (the gradient of
/// slice). Any dtype.
Tensor pad(const Tensor &input, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high);

// --- optimizer updates -------------------------------------------------------
/// One torch.optim.AdamW step (decoupled weight decay); `step` is the 1-based
/// step number as an f32 scalar tensor:
///   p = p * (1 - lr * wd); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
///   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
/// param may be f32, f64, bf16 or f16; grad, expAvg and expAvgSq share one
/// float dtype. Computed in f32 (in f64 when param or moments are f64), as
/// torch.optim.AdamW does, and rounded once to each result's dtype.
/// Returns {newParam, newExpAvg, newExpAvgSq}.
std::vector<Tensor> adamwUpdate(const Tensor &param, const Tensor &grad,
                                const Tensor &expAvg, const Tensor &expAvgSq,
                                const Tensor &step, double lr, double beta1,
                                double beta2, double eps, double weightDecay);
/// p - lr * (g + wd * p), computed in the gradient's compute type, returned
/// in the param's dtype.
Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay);

// --- threads -----------------------------------------------------------------
/// Threads the CPU kernels may use (OpenMP; OpenBLAS itself is kept on one
/// thread and GEMMs are split over a shape-fixed tile grid). Results do not
/// depend on it: every reduction has a fixed order.
void setNumThreads(int numThreads);
int getNumThreads();

} // namespace rtxrt

#endif // RTXRT_KERNELS_H
