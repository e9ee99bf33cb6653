//===- AttentionGrad.cpp - gradients of scaled dot-product attention ------===//
//
// With S = scale * q k^T (+ causal mask), P = softmax(S), O = P v:
//   dP = dO v^T,  dS = P * (dP - rowsum(P * dP)),
//   dq = scale * dS k,  dk = scale * dS^T q,  dv = P^T dO.
// P is recomputed from q and k, as FlashAttention does, instead of saved.
//
// As in the forward, the query heads that share one key/value head form one
// [g*Sq, D] block of rows, processed a bounded block of rows at a time. dk
// and dv sum over all those rows (every query head of the group), so one
// work item is a whole (batch, kv head): its row blocks are processed in
// order by one thread and accumulate into dk/dv with serial GEMMs. The split
// depends on the shape only, so the thread count never changes the result.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "Blas.h"
#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {
constexpr int64_t kScoreElements = int64_t{1} << 20; // 4 MiB of f32
} // namespace

std::vector<Tensor> rtxrt::attentionGrad(const Tensor &query, const Tensor &key,
                                         const Tensor &value,
                                         const Tensor &resultGrad, bool causal,
                                         double scale) {
  const std::string op = "rtx.attention_grad";
  AttentionDims dims =
      checkAttentionArguments(op, query, key, value, causal, scale);
  checkFloat(op, resultGrad, "result_grad");
  checkSameDType(op, query, "query", resultGrad, "result_grad");
  checkSameShape(op, query, "query", resultGrad, "result_grad");
  int64_t b = dims.b, hq = dims.hq, sq = dims.sq, d = dims.d, hkv = dims.hkv,
          skv = dims.skv, group = dims.group;
  Tensor q = toCompute(query), k = toCompute(key), v = toCompute(value);
  Tensor dout = toCompute(resultGrad);
  Tensor dq(query.shape(), q.dtype()), dk(key.shape(), k.dtype()),
      dv(value.shape(), v.dtype());
  auto results = [&] {
    return std::vector<Tensor>{fromCompute(dq, query.dtype()),
                               fromCompute(dk, key.dtype()),
                               fromCompute(dv, value.dtype())};
  };
  if (dq.numel() == 0 || dk.numel() == 0)
    return results();

  dispatchCompute(query.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>();
    const T *pdo = dout.data<T>();
    T *pdq = dq.data<T>(), *pdk = dk.data<T>(), *pdv = dv.data<T>();
    int64_t rows = group * sq; // query rows that share one kv head
    int64_t blockRows =
        std::max<int64_t>(1, std::min<int64_t>(rows, kScoreElements / skv));
    pinBlasToOneThread();
    parallelFor(b * hkv, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> probs(blockRows * skv), dprobs(blockRows * skv);
      for (int64_t head = begin; head < end; ++head) { // = bi * hkv + kh
        int64_t bi = head / hkv, kh = head % hkv;
        int64_t qOffset = (bi * hq + kh * group) * sq * d;
        const T *kBase = pk + head * skv * d;
        const T *vBase = pv + head * skv * d;
        T *dkBase = pdk + head * skv * d;
        T *dvBase = pdv + head * skv * d;
        for (int64_t r0 = 0; r0 < rows; r0 += blockRows) {
          int64_t n = std::min(blockRows, rows - r0);
          const T *qBlock = pq + qOffset + r0 * d;
          const T *doBlock = pdo + qOffset + r0 * d;
          T *p = probs.data(), *dp = dprobs.data();
          // P, recomputed exactly as rtx.attention computes it.
          gemm(false, true, n, skv, d, T(scale), qBlock, d, kBase, d, T(0), p,
               skv);
          for (int64_t r = 0; r < n; ++r) {
            T *row = p + r * skv;
            int64_t pos = (r0 + r) % sq;
            attentionSoftmaxRow(row, causal ? pos + 1 : skv, skv);
          }
          // dv += P^T dO (all row blocks of the group, in order).
          gemm(true, false, skv, d, n, T(1), p, skv, doBlock, d,
               T(r0 == 0 ? 0 : 1), dvBase, d);
          // dP = dO v^T, then dS = P * (dP - rowsum(P * dP)) in place.
          gemm(false, true, n, skv, d, T(1), doBlock, d, vBase, d, T(0), dp,
               skv);
          for (int64_t r = 0; r < n; ++r)
            attentionGradRow(p + r * skv, dp + r * skv, skv);
          // dq = scale * dS k; dk += scale * dS^T q.
          gemm(false, false, n, d, skv, T(scale), dp, skv, kBase, d, T(0),
               pdq + qOffset + r0 * d, d);
          gemm(true, false, skv, d, n, T(scale), dp, skv, qBlock, d,
               T(r0 == 0 ? 0 : 1), dkBase, d);
        }
      }
    });
    return 0;
  });
  return results();
}
