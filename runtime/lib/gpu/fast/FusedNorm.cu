//===- FusedNorm.cu - residual add + layernorm/rmsnorm, fast --------------===//
//
// One block per row. The sum x + r is computed in f32, rounded to the
// storage type and stored once (128-bit accesses where the row is aligned);
// the rounded row stays in shared memory as f32 for the statistics (mean,
// then the centred variance: two passes over shared memory, no
// cancellation) and the normalised output. See FusedFast.h.
//
//===----------------------------------------------------------------------===//

#include "FusedDevice.cuh"
#include "FusedFast.h"

#include "../Portable.h"

#include <algorithm>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;

namespace rtxrt {
namespace gpu {
namespace fast {
namespace {

constexpr int kNormThreads = 256;

template <typename S>
__global__ void addNormKernel(const S *__restrict x, const S *__restrict r,
                              const S *__restrict g, const S *__restrict b,
                              S *__restrict sum, S *__restrict y, int64_t d,
                              float epsilon, bool layerNorm, bool vec) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  int64_t base = static_cast<int64_t>(blockIdx.x) * d;
  constexpr int V = vecWidth<S>();
  float local = 0.0f;
  if (vec) {
    const uint4 *xv = reinterpret_cast<const uint4 *>(x + base);
    const uint4 *rv = reinterpret_cast<const uint4 *>(r + base);
    uint4 *sv = reinterpret_cast<uint4 *>(sum + base);
    for (int64_t k = threadIdx.x; k < d / V; k += blockDim.x) {
      alignas(16) S xs[V], rs[V], ss[V];
      *reinterpret_cast<uint4 *>(xs) = xv[k];
      *reinterpret_cast<uint4 *>(rs) = rv[k];
      for (int j = 0; j < V; ++j) {
        ss[j] = fromF<S>(toF(xs[j]) + toF(rs[j]));
        float stored = toF(ss[j]);
        row[k * V + j] = stored;
        local += stored;
      }
      sv[k] = *reinterpret_cast<uint4 *>(ss);
    }
  } else {
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      S s = fromF<S>(toF(x[base + i]) + toF(r[base + i]));
      sum[base + i] = s;
      float stored = toF(s);
      row[i] = stored;
      local += stored;
    }
  }
  float mean = 0.0f;
  if (layerNorm)
    mean = blockSum(local, scratch) / static_cast<float>(d);
  else
    __syncthreads(); // the row is complete before the next pass reads it
  float squares = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float c = row[i] - mean;
    squares += c * c;
  }
  float rstd =
      rsqrtf(blockSum(squares, scratch) / static_cast<float>(d) + epsilon);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float scale = toF(g[i]);
    float v =
        layerNorm ? (row[i] - mean) * rstd * scale : row[i] * rstd * scale;
    if (b)
      v += toF(b[i]);
    y[base + i] = fromF<S>(v);
  }
}

template <typename S>
void launchAddNorm(const Tensor &input, const Tensor &residual,
                   const Tensor &scale, const Tensor &bias, Tensor &sum,
                   Tensor &y, int64_t rows, int64_t d, double epsilon,
                   bool layerNorm) {
  const S *px = static_cast<const S *>(input.raw());
  const S *pr = static_cast<const S *>(residual.raw());
  S *ps = static_cast<S *>(sum.raw());
  S *py = static_cast<S *>(y.raw());
  bool vec =
      d % vecWidth<S>() == 0 && aligned16(px) && aligned16(pr) && aligned16(ps);
  size_t shared = static_cast<size_t>(d) * sizeof(float);
  // Enough whole warps for one access each in the widest pass, at most
  // kNormThreads: a GPT-2 row (768 bf16, 96 vectors) takes 96 threads, so
  // more rows' blocks share an SM.
  int64_t accesses = vec ? d / vecWidth<S>() : d;
  int threads = static_cast<int>(std::min<int64_t>(
      kNormThreads, std::max<int64_t>(32, (accesses + 31) / 32 * 32)));
  addNormKernel<S><<<static_cast<unsigned>(rows), threads, shared, stream()>>>(
      px, pr, static_cast<const S *>(scale.raw()),
      bias.defined() ? static_cast<const S *>(bias.raw()) : nullptr, ps, py, d,
      static_cast<float>(epsilon), layerNorm, vec);
  check(cudaGetLastError(), "the fused add-norm kernel");
}

} // namespace

bool addNormCovers(const Tensor &input, const Tensor &scale, const Tensor &bias,
                   int64_t d) {
  DType t = input.dtype();
  return t != DType::F64 && scale.dtype() == t &&
         (!bias.defined() || bias.dtype() == t) && d > 0 &&
         d <= kMaxAddNormWidth && input.numel() / d < (int64_t{1} << 31);
}

std::vector<Tensor> addNorm(const Tensor &input, const Tensor &residual,
                            const Tensor &scale, const Tensor &bias,
                            double epsilon, bool layerNorm) {
  int64_t d = input.dim(input.rank() - 1);
  int64_t rows = input.numel() / d;
  Tensor sum = empty(input.shape(), input.dtype());
  Tensor y = empty(input.shape(), input.dtype());
  if (rows == 0)
    return {sum, y};
  switch (input.dtype()) {
  case DType::BF16:
    launchAddNorm<__nv_bfloat16>(input, residual, scale, bias, sum, y, rows, d,
                                 epsilon, layerNorm);
    break;
  case DType::F16:
    launchAddNorm<__half>(input, residual, scale, bias, sum, y, rows, d,
                          epsilon, layerNorm);
    break;
  default:
    launchAddNorm<float>(input, residual, scale, bias, sum, y, rows, d, epsilon,
                         layerNorm);
  }
  return {sum, y};
}

} // namespace fast
} // namespace gpu
} // namespace rtxrt
