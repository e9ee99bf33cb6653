//===- KernelUtils.h - helpers shared by the CPU kernels --------*- C++ -*-===//
//
// Private to librtxrt: thread partitioning, the float "compute type" rule
// (bf16/f16 are computed in f32) and argument checks with uniform messages.
//
// Determinism: parallelFor hands each thread whole, contiguous ranges of
// *independent* work items (elements, rows). A kernel never splits one
// reduction across threads unless the split is fixed by the data size alone
// (see Reduction.cpp), so results never depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_KERNELS_KERNELUTILS_H
#define RTXRT_LIB_KERNELS_KERNELUTILS_H

#include "rtxrt/core/Tensor.h"
#include "rtxrt/kernels/LrSchedule.h"

#include "../common/ElementMath.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace rtxrt {
namespace detail {

// The element math and fixed-order reductions shared with the GPU kernels
// (runtime/lib/common/ElementMath.h), by their short names.
using math::attentionGradRow;
using math::attentionSoftmaxRow;
using math::crossEntropyGradRow;
using math::crossEntropyLoss;
using math::expApprox;
using math::kLanes;
using math::laneMax;
using math::laneSum;
using math::layerNormValue;
using math::normStatistics;
using math::rmsNormValue;
using math::softmaxGradRow;
using math::softmaxRow;
using math::softmaxStatistics;
using math::tanhApprox;

/// Calls body(begin, end) on disjoint ranges covering [0, n), in parallel
/// when there are at least 2 * grain items and more than one thread. The body
/// must not throw (exceptions cannot leave an OpenMP region): check arguments
/// first.
template <typename Body>
void parallelFor(int64_t n, int64_t grain, Body &&body) {
  if (n <= 0)
    return;
#ifdef _OPENMP
  int maxThreads = omp_in_parallel() ? 1 : omp_get_max_threads();
  int64_t chunks =
      std::min<int64_t>(maxThreads, n / std::max<int64_t>(grain, 1));
  if (chunks >= 2) {
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(chunks))
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t begin = n * c / chunks;
      int64_t end = n * (c + 1) / chunks;
      body(begin, end);
    }
    return;
  }
#endif
  body(int64_t{0}, n);
}

/// Grain sizes: enough work per thread to amortise waking it.
constexpr int64_t kElementGrain = 1 << 16;
inline int64_t rowGrain(int64_t rowLength) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(rowLength, 1));
}

/// f32 for f32/bf16/f16, f64 for f64: the type a float kernel computes in.
inline DType computeType(DType dtype) {
  return dtype == DType::F64 ? DType::F64 : DType::F32;
}

/// The tensor in its compute type (shares the buffer when already there).
inline Tensor toCompute(const Tensor &t) {
  DType c = computeType(t.dtype());
  return t.dtype() == c ? t : t.to(c);
}

/// A result computed in the compute type, returned in `dtype` (rounded to
/// nearest even for bf16/f16).
inline Tensor fromCompute(const Tensor &t, DType dtype) {
  return t.dtype() == dtype ? t : t.to(dtype);
}

/// Calls f(float{}) or f(double{}) for the compute type of `dtype`.
template <typename F> auto dispatchCompute(DType dtype, F &&f) {
  if (dtype == DType::F64)
    return f(double{});
  return f(float{});
}

[[noreturn]] inline void fail(const std::string &op, const std::string &what) {
  throw Error(op + ": " + what);
}

inline void checkDefined(const std::string &op, const Tensor &t,
                         const char *name) {
  if (!t.defined())
    fail(op, std::string(name) + " is undefined");
}

inline void checkFloat(const std::string &op, const Tensor &t,
                       const char *name) {
  checkDefined(op, t, name);
  if (!isFloat(t.dtype()))
    fail(op, std::string(name) + " must be a float tensor, got " +
                 dtypeName(t.dtype()) + " " + shapeToString(t.shape()));
}

inline void checkInteger(const std::string &op, const Tensor &t,
                         const char *name) {
  checkDefined(op, t, name);
  if (t.dtype() != DType::I32 && t.dtype() != DType::I64)
    fail(op, std::string(name) + " must be an i32 or i64 tensor, got " +
                 dtypeName(t.dtype()));
}

inline void checkSameDType(const std::string &op, const Tensor &a,
                           const char *aName, const Tensor &b,
                           const char *bName) {
  if (a.dtype() != b.dtype())
    fail(op, std::string(aName) + " is " + dtypeName(a.dtype()) + " but " +
                 bName + " is " + dtypeName(b.dtype()));
}

inline void checkSameShape(const std::string &op, const Tensor &a,
                           const char *aName, const Tensor &b,
                           const char *bName) {
  if (a.shape() != b.shape())
    fail(op, std::string(aName) + " has shape " + shapeToString(a.shape()) +
                 " but " + bName + " has shape " + shapeToString(b.shape()));
}

/// Two float tensors of one dtype and shape (an elementwise pair: swiglu's
/// gate and up, a unary gradient's input and result gradient).
inline void checkElementwisePair(const std::string &op, const Tensor &a,
                                 const char *aName, const Tensor &b,
                                 const char *bName) {
  checkFloat(op, a, aName);
  checkFloat(op, b, bName);
  checkSameDType(op, a, aName, b, bName);
  checkSameShape(op, a, aName, b, bName);
}

/// Normalises a possibly negative dimension index; throws when out of range.
inline int64_t normalizeDim(const std::string &op, int64_t dim, int64_t rank) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    fail(op, "dimension " + std::to_string(dim) + " is out of range for rank " +
                 std::to_string(rank));
  return d;
}

/// Row-major strides of a shape, in elements.
inline std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// The ids of a table lookup (i32 or i64) as int64, every one checked to lie
/// in [0, vocab) before any parallel work: a bad id is an Error naming the
/// id and its index, never an out-of-bounds access.
std::vector<int64_t> loadIds(const std::string &op, const Tensor &ids,
                             int64_t vocab);

/// The labels [...] of a cross-entropy over logits [..., V] as int64, checked
/// the same way; with `hasIgnoreIndex`, `ignoreIndex` is allowed too. When
/// the logits are one shard of a larger vocabulary, `vocab` is its size
/// (by default, V).
std::vector<int64_t> loadLabels(const std::string &op, const Tensor &logits,
                                const Tensor &labels, bool hasIgnoreIndex,
                                int64_t ignoreIndex, int64_t vocab = -1);

/// The shapes of an attention: q [b, hq, sq, d], k/v [b, hkv, skv, d];
/// `group` query heads share one key/value head.
struct AttentionDims {
  int64_t b, hq, sq, d, hkv, skv, group;
};
/// The operand checks of rtx.attention and rtx.attention_grad (shared by the
/// CPU and GPU kernels).
AttentionDims checkAttentionArguments(const std::string &op,
                                      const Tensor &query, const Tensor &key,
                                      const Tensor &value, bool causal,
                                      double scale);

/// The operand checks of rtx.layernorm and rtx.rmsnorm (bias may be
/// undefined), shared by the CPU and GPU kernels; returns the row length.
int64_t checkNormArguments(const std::string &op, const Tensor &input,
                           const Tensor &scale, const Tensor &bias);
/// The operand checks of rtx.layernorm_grad and rtx.rmsnorm_grad; returns
/// the row length.
int64_t checkNormGradArguments(const std::string &op, const Tensor &input,
                               const Tensor &scale, const Tensor &resultGrad);
/// The operand checks of rtx.embedding_grad for a table of `tableShape`
/// [V, D] at row `offset` of a vocabulary of `globalVocab` (the ids
/// themselves are the caller's to check).
void checkEmbeddingGradArguments(const std::string &op, const Tensor &ids,
                                 const Tensor &resultGrad,
                                 const Shape &tableShape, int64_t offset,
                                 int64_t globalVocab);

/// A checked matmul, batch_matmul or linear as GEMMs: `batch` products of
/// [m, k] x [k, n] (after the operands' transposes), rhs advancing
/// rhsBatchStride elements per product (0: one rhs for all), into a result
/// of `resultShape`.
struct ContractionDims {
  int64_t batch, m, n, k, rhsBatchStride;
  Shape resultShape;
};
/// The operand checks of rtx.matmul, rtx.batch_matmul and rtx.linear
/// (shared by the CPU and GPU kernels; bias may be undefined).
ContractionDims checkMatmulArguments(const std::string &op, const Tensor &lhs,
                                     const Tensor &rhs, bool transposeLhs,
                                     bool transposeRhs);
ContractionDims checkBatchMatmulArguments(const std::string &op,
                                          const Tensor &lhs, const Tensor &rhs,
                                          bool transposeLhs, bool transposeRhs);
ContractionDims checkLinearArguments(const std::string &op, const Tensor &input,
                                     const Tensor &weight, const Tensor &bias);
/// The operand checks of rtx.gemm_epilogue (CPU and GPU kernels): the
/// product's {M, N, K} and the result's shape (the lhs's leading dims + N).
struct GemmEpilogueDims {
  int64_t m, n, k;
  Shape resultShape;
};
GemmEpilogueDims
checkGemmEpilogueArguments(const std::string &op, GemmEpilogue epilogue,
                           const Tensor &lhs, const Tensor &rhs,
                           bool transposeLhs, bool transposeRhs,
                           const Tensor &bias, const Tensor &preActivation);

/// The operand and hyper-parameter checks of rtx.adamw_update (shared by
/// the CPU and GPU kernels; the step's value is the caller's to check),
/// its learning-rate schedule's included.
void checkAdamWArguments(const std::string &op, const Tensor &param,
                         const Tensor &grad, const Tensor &expAvg,
                         const Tensor &expAvgSq, const Tensor &step,
                         const LrSchedule &schedule, double beta1, double beta2,
                         double eps, double weightDecay);
/// The operand checks of the fused ops (Fused.cpp), shared by the CPU and
/// GPU kernels. addNorm: input and residual of one float dtype and shape,
/// then checkNormArguments; returns the row length.
int64_t checkAddNormArguments(const std::string &op, const Tensor &input,
                              const Tensor &residual, const Tensor &scale,
                              const Tensor &bias);
/// rtx.multi_adamw_update: N >= 1 of each list, each i as
/// checkAdamWArguments, all params of one dtype, all grads of another.
void checkMultiAdamWArguments(const std::string &op,
                              const std::vector<Tensor> &params,
                              const std::vector<Tensor> &grads,
                              const std::vector<Tensor> &expAvgs,
                              const std::vector<Tensor> &expAvgSqs,
                              const Tensor &step, const LrSchedule &schedule,
                              double beta1, double beta2, double eps,
                              double weightDecay);
/// rtx.sum_squares: at least one input, each f32, bf16 or f16.
void checkSumSquaresArguments(const std::string &op,
                              const std::vector<Tensor> &inputs);
/// The block of rtx.reduce's sums: each block of a row is summed in double
/// in index order, the blocks' sums then added in block order.
constexpr int64_t kReduceBlock = int64_t{1} << 16;
/// The same for rtx.sgd_update.
void checkSgdArguments(const std::string &op, const Tensor &param,
                       const Tensor &grad, double lr, double weightDecay);

/// Checks that `v` is a float vector [D] with D the last dimension of
/// `input` (the scale and bias of the normalisations).
void checkFeatureVector(const std::string &op, const Tensor &v,
                        const char *name, const Tensor &input);

/// Checks the operand of rtx.rope / rtx.rope_grad ([B, H, S, D], D even)
/// and theta (> 0).
void checkRopeInput(const std::string &op, const Tensor &input,
                    const char *name, double theta);

/// cos and sin of rtx.rope's angles, [S, D/2] row-major: pair i at position
/// p + offset turns by (p + offset) * theta^(-2i/D). Computed in double: at
/// long positions an f32 angle would be off by up to position * 2^-24
/// radians. Shared by rope and rope_grad so the inverse is exact.
void ropeAngles(int64_t seq, int64_t headDim, double theta, int64_t offset,
                std::vector<double> &cosTable, std::vector<double> &sinTable);

/// Maps local row-major index `i` of a shard with `localShape`, placed at
/// `offsets` inside `globalShape`, to the global row-major index.
class GlobalIndexer {
public:
  /// Empty globalShape: the local tensor is the whole tensor. Throws (naming
  /// `op`) when the shard does not fit in the global shape.
  GlobalIndexer(const std::string &op, const Shape &localShape,
                const Shape &globalShape,
                const std::vector<int64_t> &globalOffsets);
  bool isIdentity() const { return identity; }
  int64_t operator()(int64_t localIndex) const {
    if (identity)
      return localIndex;
    int64_t global = 0;
    for (int64_t d = static_cast<int64_t>(local.size()) - 1; d >= 0; --d) {
      int64_t coord = localIndex % local[d];
      localIndex /= local[d];
      global += (coord + offsets[d]) * globalStrides[d];
    }
    return global;
  }

private:
  bool identity = true;
  Shape local;
  std::vector<int64_t> offsets, globalStrides;
};

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_KERNELS_KERNELUTILS_H
