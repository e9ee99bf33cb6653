//===- FusedOptimizer.cu - multi-tensor AdamW and sum of squares, fast ----===//
//
// As apex's and PyTorch's multi_tensor_apply: the host writes a table of the
// tensors (pointers, lengths, where each one's chunks start) and ONE kernel
// launch updates every chunk of every tensor, a block per chunk. The table
// travels as the kernel's parameters (no copy, no host sync). AdamW computes in
// f32 from the stored values, as the CPU kernel does, with its coefficients
// derived from the step on the device. See FusedFast.h.
//
//===----------------------------------------------------------------------===//

#include "FusedDevice.cuh"
#include "FusedFast.h"

#include "../Portable.h"
#include "rtxrt/kernels/LrSchedule.h"

#include <algorithm>
#include <vector>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;

namespace rtxrt {
namespace gpu {
namespace fast {
namespace {

/// Elements per chunk: one block of kChunkThreads, 16 each.
constexpr int64_t kChunk = 4096;
constexpr int kChunkThreads = 256;

struct AdamWTensor {
  const void *param;
  const float *grad, *expAvg, *expAvgSq;
  void *newParam;
  float *newExpAvg, *newExpAvgSq;
  int64_t n;
  int64_t vec; // 1: every buffer 16-byte aligned (4 elements per access)
};

struct Chunk {
  int64_t tensor;
  int64_t start;
};

/// The AdamW launch's table, passed as the kernel's parameters (up to 32 KB
/// since CUDA 12.1): no copy to the device and no host synchronisation, so
/// a captured CUDA graph replays it as it is. Tensor t's chunks are the
/// blocks [firstChunk[t], firstChunk[t + 1]). More tensors than fit take
/// more launches (apex does the same); GPT-2's 148 take one.
constexpr int kTableTensors = 384;
struct AdamWTable {
  int64_t count;
  int64_t firstChunk[kTableTensors + 1];
  AdamWTensor tensors[kTableTensors];
};
static_assert(sizeof(AdamWTable) <= 32000, "kernel parameters hold 32764 B");

/// The tensor whose chunks include block `block`: the last t with
/// firstChunk[t] <= block (binary search; empty tensors own no block).
template <typename Table>
__device__ __forceinline__ int64_t tensorOfBlock(const Table &table,
                                                 int64_t block) {
  int64_t lo = 0, hi = table.count - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (table.firstChunk[mid] <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

struct AdamWCoefficients {
  float beta1, beta2, oneMinusBeta1, oneMinusBeta2, decay, stepSize,
      invSqrtCorrection2, eps;
};

__device__ __forceinline__ void adamwElement(const AdamWCoefficients &k,
                                             float p, float g, float m, float v,
                                             float &newP, float &newM,
                                             float &newV) {
  newM = k.beta1 * m + k.oneMinusBeta1 * g;
  newV = k.beta2 * v + k.oneMinusBeta2 * g * g;
  newP = p * k.decay -
         k.stepSize * newM / (sqrtf(newV) * k.invSqrtCorrection2 + k.eps);
}

template <typename P>
__global__ void multiAdamwKernel(const __grid_constant__ AdamWTable table,
                                 const float *step, LrSchedule schedule,
                                 double beta1, double beta2, double eps,
                                 double weightDecay) {
  __shared__ AdamWCoefficients k;
  if (threadIdx.x == 0) {
    double t = *step;
    double lr = schedule.at(t);
    k = {float(beta1),
         float(beta2),
         float(1.0 - beta1),
         float(1.0 - beta2),
         float(1.0 - lr * weightDecay),
         float(lr / (1.0 - pow(beta1, t))),
         float(1.0 / sqrt(1.0 - pow(beta2, t))),
         float(eps)};
  }
  __syncthreads();
  int64_t t = tensorOfBlock(table, blockIdx.x);
  Chunk c{t, (static_cast<int64_t>(blockIdx.x) - table.firstChunk[t]) * kChunk};
  const AdamWTensor &a = table.tensors[t];
  const P *param = static_cast<const P *>(a.param);
  P *newParam = static_cast<P *>(a.newParam);
  int64_t end = c.start + kChunk < a.n ? c.start + kChunk : a.n;
  if (a.vec) {
    // Four elements per access: float4 moments, 4 params (16 or 8 bytes).
    int64_t full = c.start + (end - c.start) / 4 * 4;
    for (int64_t i = c.start + 4 * threadIdx.x; i < full; i += 4 * blockDim.x) {
      float4 g = *reinterpret_cast<const float4 *>(a.grad + i);
      float4 m = *reinterpret_cast<const float4 *>(a.expAvg + i);
      float4 v = *reinterpret_cast<const float4 *>(a.expAvgSq + i);
      float gs[4] = {g.x, g.y, g.z, g.w}, ms[4] = {m.x, m.y, m.z, m.w},
            vs[4] = {v.x, v.y, v.z, v.w};
      alignas(16) P ps[4];
      if (sizeof(P) == 4)
        *reinterpret_cast<uint4 *>(ps) =
            *reinterpret_cast<const uint4 *>(param + i);
      else
        *reinterpret_cast<uint2 *>(ps) =
            *reinterpret_cast<const uint2 *>(param + i);
      float np[4], nm[4], nv[4];
      for (int j = 0; j < 4; ++j) {
        adamwElement(k, toF(ps[j]), gs[j], ms[j], vs[j], np[j], nm[j], nv[j]);
        ps[j] = fromF<P>(np[j]);
      }
      *reinterpret_cast<float4 *>(a.newExpAvg + i) =
          make_float4(nm[0], nm[1], nm[2], nm[3]);
      *reinterpret_cast<float4 *>(a.newExpAvgSq + i) =
          make_float4(nv[0], nv[1], nv[2], nv[3]);
      if (sizeof(P) == 4)
        *reinterpret_cast<uint4 *>(newParam + i) =
            *reinterpret_cast<const uint4 *>(ps);
      else
        *reinterpret_cast<uint2 *>(newParam + i) =
            *reinterpret_cast<const uint2 *>(ps);
    }
    // The tail of the tensor (fewer than 4 elements), one thread each.
    for (int64_t i = full + threadIdx.x; i < end; i += blockDim.x) {
      float np, nm, nv;
      adamwElement(k, toF(param[i]), a.grad[i], a.expAvg[i], a.expAvgSq[i], np,
                   nm, nv);
      newParam[i] = fromF<P>(np);
      a.newExpAvg[i] = nm;
      a.newExpAvgSq[i] = nv;
    }
    return;
  }
  for (int64_t i = c.start + threadIdx.x; i < end; i += blockDim.x) {
    float np, nm, nv;
    adamwElement(k, toF(param[i]), a.grad[i], a.expAvg[i], a.expAvgSq[i], np,
                 nm, nv);
    newParam[i] = fromF<P>(np);
    a.newExpAvg[i] = nm;
    a.newExpAvgSq[i] = nv;
  }
}

struct SquaresTensor {
  const void *data;
  int64_t n;
  int64_t dtype; // 0 f32, 1 bf16, 2 f16
};

__device__ __forceinline__ float loadAsFloat(const SquaresTensor &t,
                                             int64_t i) {
  if (t.dtype == 0)
    return static_cast<const float *>(t.data)[i];
  if (t.dtype == 1)
    return toF(static_cast<const __nv_bfloat16 *>(t.data)[i]);
  return toF(static_cast<const __half *>(t.data)[i]);
}

/// The sum of squares' table, as AdamWTable: kernel parameters, tensor t's
/// chunks the blocks [firstChunk[t], firstChunk[t + 1]) of this launch,
/// whose partial sums go to partial[chunkOffset + block].
constexpr int kSquaresTensors = 768;
struct SquaresTable {
  int64_t count;
  int64_t chunkOffset;
  int64_t firstChunk[kSquaresTensors + 1];
  SquaresTensor tensors[kSquaresTensors];
};
static_assert(sizeof(SquaresTable) <= 32000, "kernel parameters hold 32764 B");

__global__ void squareChunksKernel(const __grid_constant__ SquaresTable table,
                                   double *partial) {
  __shared__ double scratch[32];
  int64_t t = tensorOfBlock(table, blockIdx.x);
  const SquaresTensor &x = table.tensors[t];
  int64_t start =
      (static_cast<int64_t>(blockIdx.x) - table.firstChunk[t]) * kChunk;
  int64_t end = start + kChunk < x.n ? start + kChunk : x.n;
  double local = 0.0;
  for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
    float v = loadAsFloat(x, i);
    local += static_cast<double>(v * v); // the f32 square, as the reference
  }
  double total = blockSum(local, scratch);
  if (threadIdx.x == 0)
    partial[table.chunkOffset + blockIdx.x] = total;
}

/// One thread per tensor adds its chunks in order (rounded to f32); the
/// first thread adds the tensors in order to the f32 total (which the
/// launches before this one's tensors began, unless `first`).
__global__ void sumTensorsKernel(const __grid_constant__ SquaresTable table,
                                 const double *partial, float *perTensor,
                                 float *total, bool first) {
  const double *mine = partial + table.chunkOffset;
  for (int64_t t = threadIdx.x; t < table.count; t += blockDim.x) {
    double acc = 0.0;
    for (int64_t c = table.firstChunk[t]; c < table.firstChunk[t + 1]; ++c)
      acc += mine[c];
    perTensor[t] = static_cast<float>(acc);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = first ? 0.0f : *total;
    for (int64_t t = 0; t < table.count; ++t)
      sum = sum + perTensor[t];
    *total = sum;
  }
}

} // namespace

bool multiAdamwCovers(const std::vector<Tensor> &params,
                      const std::vector<Tensor> &grads) {
  return params[0].dtype() != DType::F64 && grads[0].dtype() == DType::F32;
}

std::vector<Tensor> multiAdamwUpdate(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, const LrSchedule &schedule, double beta1, double beta2,
    double eps, double weightDecay) {
  size_t n = params.size();
  std::vector<Tensor> results(3 * n);
  std::vector<AdamWTensor> table(n);
  std::vector<int64_t> lengths(n);
  for (size_t i = 0; i < n; ++i) {
    results[i] = empty(params[i].shape(), params[i].dtype());
    results[n + i] = empty(grads[i].shape(), DType::F32);
    results[2 * n + i] = empty(grads[i].shape(), DType::F32);
    AdamWTensor &t = table[i];
    t.param = params[i].raw();
    t.grad = static_cast<const float *>(grads[i].raw());
    t.expAvg = static_cast<const float *>(expAvgs[i].raw());
    t.expAvgSq = static_cast<const float *>(expAvgSqs[i].raw());
    t.newParam = results[i].raw();
    t.newExpAvg = static_cast<float *>(results[n + i].raw());
    t.newExpAvgSq = static_cast<float *>(results[2 * n + i].raw());
    t.n = params[i].numel();
    // 4 params per access: 16 bytes of f32 or 8 of bf16/f16.
    size_t paramAlign = 4 * dtypeSize(params[i].dtype());
    auto alignedTo = [](const void *p, size_t a) {
      return reinterpret_cast<uintptr_t>(p) % a == 0;
    };
    t.vec = alignedTo(t.param, paramAlign) &&
            alignedTo(t.newParam, paramAlign) && aligned16(t.grad) &&
            aligned16(t.expAvg) && aligned16(t.expAvgSq) &&
            aligned16(t.newExpAvg) && aligned16(t.newExpAvgSq);
    lengths[i] = t.n;
  }
  auto *ps = static_cast<const float *>(step.raw());
  for (size_t first = 0; first < n; first += kTableTensors) {
    AdamWTable launch{};
    launch.count =
        static_cast<int64_t>(std::min<size_t>(kTableTensors, n - first));
    for (int64_t t = 0; t < launch.count; ++t) {
      launch.tensors[t] = table[first + t];
      launch.firstChunk[t + 1] =
          launch.firstChunk[t] + (lengths[first + t] + kChunk - 1) / kChunk;
    }
    unsigned blocks = static_cast<unsigned>(launch.firstChunk[launch.count]);
    if (blocks == 0)
      continue;
    switch (params[0].dtype()) {
    case DType::BF16:
      multiAdamwKernel<__nv_bfloat16><<<blocks, kChunkThreads, 0, stream()>>>(
          launch, ps, schedule, beta1, beta2, eps, weightDecay);
      break;
    case DType::F16:
      multiAdamwKernel<__half><<<blocks, kChunkThreads, 0, stream()>>>(
          launch, ps, schedule, beta1, beta2, eps, weightDecay);
      break;
    default:
      multiAdamwKernel<float><<<blocks, kChunkThreads, 0, stream()>>>(
          launch, ps, schedule, beta1, beta2, eps, weightDecay);
    }
    check(cudaGetLastError(), "the multi-tensor AdamW kernel");
  }
  return results;
}

Tensor sumSquares(const std::vector<Tensor> &inputs) {
  size_t n = inputs.size();
  int64_t chunks = 0;
  for (const Tensor &input : inputs)
    chunks += (input.numel() + kChunk - 1) / kChunk;
  Tensor total = empty({}, DType::F32);
  Tensor partial = empty({chunks > 0 ? chunks : 1}, DType::F64);
  Tensor perTensor = empty({static_cast<int64_t>(n)}, DType::F32);
  double *pp = static_cast<double *>(partial.raw());
  float *pt = static_cast<float *>(total.raw());
  int64_t chunkOffset = 0;
  for (size_t first = 0; first < n; first += kSquaresTensors) {
    SquaresTable launch{};
    launch.count =
        static_cast<int64_t>(std::min<size_t>(kSquaresTensors, n - first));
    launch.chunkOffset = chunkOffset;
    for (int64_t t = 0; t < launch.count; ++t) {
      const Tensor &x = inputs[first + t];
      DType d = x.dtype();
      launch.tensors[t] = {x.raw(), x.numel(),
                           d == DType::F32    ? 0
                           : d == DType::BF16 ? 1
                                              : 2};
      launch.firstChunk[t + 1] =
          launch.firstChunk[t] + (x.numel() + kChunk - 1) / kChunk;
    }
    int64_t blocks = launch.firstChunk[launch.count];
    if (blocks > 0) {
      squareChunksKernel<<<static_cast<unsigned>(blocks), kChunkThreads, 0,
                           stream()>>>(launch, pp);
      check(cudaGetLastError(), "the sum-of-squares chunk kernel");
    }
    sumTensorsKernel<<<1, 1024, 0, stream()>>>(
        launch, pp, static_cast<float *>(perTensor.raw()) + first, pt,
        first == 0);
    check(cudaGetLastError(), "the sum-of-squares total kernel");
    chunkOffset += blocks;
  }
  return total;
}

} // namespace fast
} // namespace gpu
} // namespace rtxrt
