//===- FusedLoss.cu - softmax cross-entropy with its gradient, fast -------===//
//
// One block per row of logits: each thread keeps an online (max, sum of
// exp(x - max)) over its elements, the block merges them; the token's loss
// is max + log(sum) - x[label]; then the gradient row (softmax - onehot) *
// dloss / n is written directly, so the probabilities are never stored.
// Rows are read with 128-bit loads where aligned. The mean loss is summed
// over tokens by one block in a fixed order. See FusedFast.h.
//
//===----------------------------------------------------------------------===//

#include "FusedDevice.cuh"
#include "FusedFast.h"

#include "../Portable.h"

#include <cmath>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;

namespace rtxrt {
namespace gpu {
namespace fast {
namespace {

constexpr int kLossThreads = 512;
constexpr int kMeanThreads = 1024;

__device__ __forceinline__ int64_t labelAt(const void *labels, bool wide,
                                           int64_t t) {
  return wide ? static_cast<const int64_t *>(labels)[t]
              : static_cast<const int32_t *>(labels)[t];
}

/// Adds v to the running (max, sum of exp(x - max)); -inf adds nothing.
__device__ __forceinline__ void onlineAdd(float v, float &max, float &sum) {
  if (v > max) {
    sum = sum * expf(max - v) + 1.0f; // max = -inf: sum is 0
    max = v;
  } else if (v != -INFINITY) {
    sum += expf(v - max); // NaN v makes the sum NaN, as the reference
  }
}

/// Merges two (max, sum) pairs; an empty side (sum 0) adds nothing.
__device__ __forceinline__ void onlineMerge(float &max, float &sum,
                                            float otherMax, float otherSum) {
  float m = fmaxf(max, otherMax);
  float a = sum == 0.0f ? 0.0f : sum * expf(max - m);
  float b = otherSum == 0.0f ? 0.0f : otherSum * expf(otherMax - m);
  max = m;
  sum = a + b;
}

__global__ void countKernel(const void *labels, bool wide, int64_t tokens,
                            bool hasIgnore, int64_t ignoreIndex,
                            int64_t *count) {
  __shared__ long long scratch[32];
  long long n = 0;
  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    n += hasIgnore && labelAt(labels, wide, t) == ignoreIndex ? 0 : 1;
  long long total = blockSum(n, scratch);
  if (threadIdx.x == 0)
    *count = total;
}

template <typename S>
__global__ void rowKernel(const S *__restrict logits, const void *labels,
                          bool wide, const void *lossGrad, bool lossGradF64,
                          const int64_t *count, int64_t vocab, bool hasIgnore,
                          int64_t ignoreIndex, bool vec, double *rowLoss,
                          S *__restrict dlogits) {
  __shared__ float maxes[32], sums[32];
  int64_t t = blockIdx.x;
  const S *row = logits + t * vocab;
  S *drow = dlogits + t * vocab;
  int64_t label = labelAt(labels, wide, t);
  constexpr int V = vecWidth<S>();
  if (hasIgnore && label == ignoreIndex) { // a zero row, not counted
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
      drow[i] = fromF<S>(0.0f);
    if (threadIdx.x == 0)
      rowLoss[t] = NAN;
    return;
  }
  float max = -INFINITY, sum = 0.0f;
  if (vec) {
    const uint4 *rv = reinterpret_cast<const uint4 *>(row);
    for (int64_t k = threadIdx.x; k < vocab / V; k += blockDim.x) {
      alignas(16) S xs[V];
      *reinterpret_cast<uint4 *>(xs) = rv[k];
      for (int j = 0; j < V; ++j)
        onlineAdd(toF(xs[j]), max, sum);
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
      onlineAdd(toF(row[i]), max, sum);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    float m = __shfl_xor_sync(0xffffffffu, max, offset);
    float s = __shfl_xor_sync(0xffffffffu, sum, offset);
    onlineMerge(max, sum, m, s);
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    maxes[warp] = max;
    sums[warp] = sum;
  }
  __syncthreads();
  int warps = blockDim.x / 32;
  max = lane < warps ? maxes[lane] : -INFINITY;
  sum = lane < warps ? sums[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) {
    float m = __shfl_xor_sync(0xffffffffu, max, offset);
    float s = __shfl_xor_sync(0xffffffffu, sum, offset);
    onlineMerge(max, sum, m, s);
  }
  // Every thread now holds the row's (max, sum).
  if (threadIdx.x == 0)
    rowLoss[t] = static_cast<double>(max) + log(static_cast<double>(sum)) -
                 static_cast<double>(toF(row[label]));
  double dloss = lossGradF64 ? *static_cast<const double *>(lossGrad)
                             : *static_cast<const float *>(lossGrad);
  float factor = static_cast<float>(dloss / static_cast<double>(*count));
  float scale = factor / sum;
  if (vec) {
    const uint4 *rv = reinterpret_cast<const uint4 *>(row);
    uint4 *dv = reinterpret_cast<uint4 *>(drow);
    for (int64_t k = threadIdx.x; k < vocab / V; k += blockDim.x) {
      alignas(16) S xs[V], ds[V];
      *reinterpret_cast<uint4 *>(xs) = rv[k];
      for (int j = 0; j < V; ++j) {
        int64_t i = k * V + j;
        ds[j] = fromF<S>(expf(toF(xs[j]) - max) * scale -
                         (i == label ? factor : 0.0f));
      }
      dv[k] = *reinterpret_cast<uint4 *>(ds);
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x)
      drow[i] = fromF<S>(expf(toF(row[i]) - max) * scale -
                         (i == label ? factor : 0.0f));
  }
}

/// The mean of the counted (non-NaN) row losses: thread-strided sums in
/// double, combined in a fixed tree.
__global__ void meanKernel(const double *rowLoss, int64_t tokens,
                           const int64_t *count, float *loss) {
  __shared__ double scratch[32];
  double total = 0.0;
  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    if (rowLoss[t] == rowLoss[t])
      total += rowLoss[t];
  total = blockSum(total, scratch);
  if (threadIdx.x == 0)
    *loss =
        *count ? static_cast<float>(total / static_cast<double>(*count)) : 0.0f;
}

template <typename S>
void launchRows(const Tensor &logits, const Tensor &labels,
                const Tensor &lossGrad, const int64_t *count, int64_t tokens,
                int64_t vocab, bool hasIgnore, int64_t ignoreIndex,
                double *rowLoss, Tensor &dlogits) {
  const S *px = static_cast<const S *>(logits.raw());
  S *pd = static_cast<S *>(dlogits.raw());
  bool vec = vocab % vecWidth<S>() == 0 && aligned16(px) && aligned16(pd);
  rowKernel<S><<<static_cast<unsigned>(tokens), kLossThreads, 0, stream()>>>(
      px, labels.raw(), labels.dtype() == DType::I64, lossGrad.raw(),
      lossGrad.dtype() == DType::F64, count, vocab, hasIgnore, ignoreIndex, vec,
      rowLoss, pd);
  check(cudaGetLastError(), "the fused cross-entropy kernel");
}

} // namespace

bool crossEntropyWithGradCovers(const Tensor &logits) {
  int64_t vocab = logits.dim(logits.rank() - 1);
  return logits.dtype() != DType::F64 && vocab > 0 &&
         logits.numel() / vocab < (int64_t{1} << 31);
}

std::vector<Tensor> crossEntropyWithGrad(const Tensor &logits,
                                         const Tensor &labels,
                                         const Tensor &lossGrad,
                                         bool hasIgnoreIndex,
                                         int64_t ignoreIndex) {
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
  Tensor dlogits = empty(logits.shape(), logits.dtype());
  Tensor loss = empty({}, DType::F32);
  Tensor count = empty({}, DType::I64);
  Tensor rowLoss = empty({tokens > 0 ? tokens : 1}, DType::F64);
  int64_t *pc = static_cast<int64_t *>(count.raw());
  double *pl = static_cast<double *>(rowLoss.raw());
  countKernel<<<1, kMeanThreads, 0, stream()>>>(
      labels.raw(), labels.dtype() == DType::I64, tokens, hasIgnoreIndex,
      ignoreIndex, pc);
  check(cudaGetLastError(), "the fused cross-entropy count kernel");
  if (tokens > 0) {
    switch (logits.dtype()) {
    case DType::BF16:
      launchRows<__nv_bfloat16>(logits, labels, lossGrad, pc, tokens, vocab,
                                hasIgnoreIndex, ignoreIndex, pl, dlogits);
      break;
    case DType::F16:
      launchRows<__half>(logits, labels, lossGrad, pc, tokens, vocab,
                         hasIgnoreIndex, ignoreIndex, pl, dlogits);
      break;
    default:
      launchRows<float>(logits, labels, lossGrad, pc, tokens, vocab,
                        hasIgnoreIndex, ignoreIndex, pl, dlogits);
    }
  }
  meanKernel<<<1, kMeanThreads, 0, stream()>>>(
      pl, tokens, pc, static_cast<float *>(loss.raw()));
  check(cudaGetLastError(), "the fused cross-entropy mean kernel");
  return {loss, dlogits};
}

} // namespace fast
} // namespace gpu
} // namespace rtxrt
