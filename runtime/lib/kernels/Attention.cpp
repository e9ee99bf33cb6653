//===- Attention.cpp - scaled dot-product attention -----------------------===//
//
// softmax(q k^T * scale [+ causal mask]) v, per batch and head, with grouped
// key/value heads. The query heads that share one key/value head are adjacent
// in [B, Hq, Sq, D], so they form one [g*Sq, D] block and the two products
// are single GEMMs per (batch, kv head) and block of rows. The scores are
// materialised one block of rows at a time (at most kScoreElements per
// thread) so memory stays bounded for long sequences.
//
// Determinism: the blocks depend on the shape only, each is computed by one
// thread (serial GEMMs, serial softmax rows), so the thread count never
// changes the result.
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

Tensor rtxrt::attention(const Tensor &query, const Tensor &key,
                        const Tensor &value, bool causal, double scale) {
  const std::string op = "rtx.attention";
  AttentionDims dims =
      checkAttentionArguments(op, query, key, value, causal, scale);
  int64_t b = dims.b, hq = dims.hq, sq = dims.sq, d = dims.d, hkv = dims.hkv,
          skv = dims.skv, group = dims.group;
  Tensor q = toCompute(query), k = toCompute(key), v = toCompute(value);
  Tensor out = Tensor::uninitialized(query.shape(), q.dtype());
  if (out.numel() == 0)
    return fromCompute(out, query.dtype());

  dispatchCompute(query.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>();
    T *po = out.data<T>();
    int64_t rows = group * sq; // query rows that share one kv head
    int64_t blockRows =
        std::max<int64_t>(1, std::min<int64_t>(rows, kScoreElements / skv));
    int64_t blocksPerHead = (rows + blockRows - 1) / blockRows;
    // Work items: (batch, kv head, block of rows). Each is computed by one
    // thread with serial GEMMs, so the split depends on the shape only.
    pinBlasToOneThread();
    parallelFor(b * hkv * blocksPerHead, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> scores(blockRows * skv);
      for (int64_t item = begin; item < end; ++item) {
        int64_t head = item / blocksPerHead; // = bi * hkv + kh
        int64_t bi = head / hkv, kh = head % hkv;
        int64_t r0 = (item % blocksPerHead) * blockRows;
        int64_t n = std::min(blockRows, rows - r0);
        const T *qBase = pq + (bi * hq + kh * group) * sq * d;
        T *oBase = po + (bi * hq + kh * group) * sq * d;
        const T *kBase = pk + head * skv * d;
        const T *vBase = pv + head * skv * d;
        T *s = scores.data();
        gemm(false, true, n, skv, d, T(scale), qBase + r0 * d, d, kBase, d,
             T(0), s, skv);
        for (int64_t r = 0; r < n; ++r) {
          T *row = s + r * skv;
          // Query position within its head; causal rows see keys <= it.
          int64_t pos = (r0 + r) % sq;
          attentionSoftmaxRow(row, causal ? pos + 1 : skv, skv);
        }
        gemm(false, false, n, d, skv, T(1), s, skv, vBase, d, T(0),
             oBase + r0 * d, d);
      }
    });
    return 0;
  });
  return fromCompute(out, query.dtype());
}
