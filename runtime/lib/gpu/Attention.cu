//===- Attention.cu - scaled dot-product attention and its gradient -------===//
//
// As on the CPU (runtime/lib/kernels/Attention.cpp), the query heads that
// share a key/value head are adjacent in [B, Hq, Sq, D], so each (batch, kv
// head) is one [g*Sq, D] block of rows and every product is one strided-
// batched GEMM over B*Hkv blocks: scores = scale q k^T, probabilities by a
// row softmax with the causal mask, out = p v. The gradient recomputes p
// and uses four more GEMMs; dk and dv sum over the group's query heads
// inside the GEMM's contraction.
//
// These portable kernels materialise the scores ([B, Hq, Sq, Skv] per
// call). On the fast path (gpu::useFastKernels(), the CUDA build) the flash
// kernels of fast/FlashAttention.cu run instead wherever they cover the
// case (f32/bf16/f16, head dims 64 and 128): O(S) memory, bf16 and f16 on
// the tensor cores. Other cases (f64, other head dims) run these kernels;
// docs/gpu.md lists them.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.h"
#include "Gemm.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"

#if defined(__CUDACC__)
#include "fast/FlashAttention.h"
#endif

#include <cmath>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkSameShape;
using rtxrt::detail::fail;

namespace {

using AttentionShape = rtxrt::detail::AttentionDims;
int64_t blockCount(const AttentionShape &s) { return s.b * s.hkv; }
int64_t blockRows(const AttentionShape &s) {
  return s.group * s.sq;
} // per block

AttentionShape checkAttention(const std::string &op, const Tensor &query,
                              const Tensor &key, const Tensor &value,
                              bool causal, double scale) {
  AttentionShape s = rtxrt::detail::checkAttentionArguments(
      op, query, key, value, causal, scale);
  checkOnGpu(op, query, "query");
  checkOnGpu(op, key, "key");
  checkOnGpu(op, value, "value");
  return s;
}

/// probs = softmax(scale q k^T) with the causal mask, [blocks, rows, Skv].
template <typename T>
Tensor probabilities(const AttentionShape &s, const T *q, const T *k,
                     double scale, bool causal, DType dtype) {
  Tensor probs = gpu::zeros({blockCount(s), blockRows(s), s.skv}, dtype);
  T *p = static_cast<T *>(probs.raw());
  gemmBatched<T>(false, true, blockRows(s), s.skv, s.d, T(scale), q, s.d,
                 blockRows(s) * s.d, k, s.d, s.skv * s.d, T(0), p, s.skv,
                 blockRows(s) * s.skv, blockCount(s));
  int64_t sq = s.sq, skv = s.skv;
  forEach(
      blockCount(s) * blockRows(s), RTX_GPU_BODY(int64_t r) {
        T *row = p + r * skv;
        // Query position within its head; causal rows see keys <= it.
        int64_t pos = r % sq;
        math::attentionSoftmaxRow(row, causal ? pos + 1 : skv, skv);
      });
  return probs;
}

template <typename T>
void attentionT(const AttentionShape &s, const Tensor &q, const Tensor &k,
                const Tensor &v, Tensor &out, bool causal, double scale) {
  Tensor probs = probabilities<T>(s, static_cast<const T *>(q.raw()),
                                  static_cast<const T *>(k.raw()), scale,
                                  causal, q.dtype());
  gemmBatched<T>(false, false, blockRows(s), s.d, s.skv, T(1),
                 static_cast<const T *>(probs.raw()), s.skv,
                 blockRows(s) * s.skv, static_cast<const T *>(v.raw()), s.d,
                 s.skv * s.d, T(0), static_cast<T *>(out.raw()), s.d,
                 blockRows(s) * s.d, blockCount(s));
}

template <typename T>
void attentionGradT(const AttentionShape &s, const Tensor &q, const Tensor &k,
                    const Tensor &v, const Tensor &dout, Tensor &dq, Tensor &dk,
                    Tensor &dv, bool causal, double scale) {
  const T *pq = static_cast<const T *>(q.raw());
  const T *pk = static_cast<const T *>(k.raw());
  const T *pv = static_cast<const T *>(v.raw());
  const T *pdo = static_cast<const T *>(dout.raw());
  Tensor probs = probabilities<T>(s, pq, pk, scale, causal, q.dtype());
  const T *pp = static_cast<const T *>(probs.raw());
  int64_t rows = blockRows(s), skv = s.skv, d = s.d, blocks = blockCount(s);
  // dv = p^T dout (the group's query rows are contracted).
  gemmBatched<T>(true, false, skv, d, rows, T(1), pp, skv, rows * skv, pdo, d,
                 rows * d, T(0), static_cast<T *>(dv.raw()), d, skv * d,
                 blocks);
  // dp = dout v^T, then ds = p (dp - rowsum(dp p)) in place, by the CPU
  // kernel's row function; the scale is the GEMMs' alpha, as on the CPU.
  Tensor ds = gpu::zeros({blocks, rows, skv}, q.dtype());
  T *pds = static_cast<T *>(ds.raw());
  gemmBatched<T>(false, true, rows, skv, d, T(1), pdo, d, rows * d, pv, d,
                 skv * d, T(0), pds, skv, rows * skv, blocks);
  forEach(
      blocks * rows, RTX_GPU_BODY(int64_t r) {
        math::attentionGradRow(pp + r * skv, pds + r * skv, skv);
      });
  // dq = scale ds k; dk = scale ds^T q.
  gemmBatched<T>(false, false, rows, d, skv, T(scale), pds, skv, rows * skv, pk,
                 d, skv * d, T(0), static_cast<T *>(dq.raw()), d, rows * d,
                 blocks);
  gemmBatched<T>(true, false, skv, d, rows, T(scale), pds, skv, rows * skv, pq,
                 d, rows * d, T(0), static_cast<T *>(dk.raw()), d, skv * d,
                 blocks);
}

} // namespace

Tensor gpu::attention(const Tensor &query, const Tensor &key,
                      const Tensor &value, bool causal, double scale) {
  AttentionShape s =
      checkAttention("rtx.attention", query, key, value, causal, scale);
#if defined(__CUDACC__)
  if (useFastKernels() &&
      fast::flashAttentionCovers(s, {&query, &key, &value})) {
    Tensor out = empty(query.shape(), query.dtype());
    if (out.numel() > 0)
      fast::flashAttention(s, query, key, value, out, causal, scale);
    return out;
  }
#endif
  Tensor q = toCompute(query), k = toCompute(key), v = toCompute(value);
  Tensor out = zeros(query.shape(), q.dtype());
  if (out.numel() > 0)
    RTX_GPU_COMPUTE(q.dtype(), attentionT, s, q, k, v, out, causal, scale);
  return fromCompute(out, query.dtype());
}

std::vector<Tensor> gpu::attentionGrad(const Tensor &query, const Tensor &key,
                                       const Tensor &value,
                                       const Tensor &resultGrad, bool causal,
                                       double scale) {
  const std::string op = "rtx.attention_grad";
  AttentionShape s = checkAttention(op, query, key, value, causal, scale);
  rtxrt::detail::checkFloat(op, resultGrad, "result_grad");
  rtxrt::detail::checkSameDType(op, query, "query", resultGrad, "result_grad");
  checkSameShape(op, query, "query", resultGrad, "result_grad");
  checkOnGpu(op, resultGrad, "result_grad");
#if defined(__CUDACC__)
  if (useFastKernels() &&
      fast::flashAttentionCovers(s, {&query, &key, &value, &resultGrad})) {
    if (query.numel() == 0 || key.numel() == 0) // sums over no rows
      return {zeros(query.shape(), query.dtype()),
              zeros(key.shape(), key.dtype()),
              zeros(value.shape(), value.dtype())};
    Tensor dq = empty(query.shape(), query.dtype());
    Tensor dk = empty(key.shape(), key.dtype());
    Tensor dv = empty(value.shape(), value.dtype());
    fast::flashAttentionGrad(s, query, key, value, resultGrad, dq, dk, dv,
                             causal, scale);
    return {dq, dk, dv};
  }
#endif
  Tensor q = toCompute(query), k = toCompute(key), v = toCompute(value),
         dout = toCompute(resultGrad);
  Tensor dq = zeros(query.shape(), q.dtype());
  Tensor dk = zeros(key.shape(), q.dtype());
  Tensor dv = zeros(value.shape(), q.dtype());
  if (query.numel() > 0 && key.numel() > 0)
    RTX_GPU_COMPUTE(q.dtype(), attentionGradT, s, q, k, v, dout, dq, dk, dv,
                    causal, scale);
  return {fromCompute(dq, query.dtype()), fromCompute(dk, key.dtype()),
          fromCompute(dv, value.dtype())};
}
