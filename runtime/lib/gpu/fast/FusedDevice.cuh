//===- FusedDevice.cuh - device helpers of the fused fast kernels -*- CUDA -*-//
//
// Conversions of the storage types to and from f32, 128-bit row access and
// block reductions. Reductions combine in a fixed tree (warp shuffles, then
// the warps' results by the first warp), so results are deterministic for a
// given block size.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_FUSEDDEVICE_CUH
#define RTXRT_LIB_GPU_FAST_FUSEDDEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace rtxrt {
namespace gpu {
namespace fast {

__device__ __forceinline__ float toF(float v) { return v; }
__device__ __forceinline__ float toF(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float toF(__half v) { return __half2float(v); }

template <typename S> __device__ __forceinline__ S fromF(float v);
template <> __device__ __forceinline__ float fromF<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 fromF(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half fromF(float v) {
  return __float2half_rn(v);
}

/// Elements of S in one 128-bit access.
template <typename S> __host__ __device__ constexpr int vecWidth() {
  return 16 / sizeof(S);
}

inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Sum over the warp, then over the block's warps (blockDim.x a multiple of
/// 32, at most 1024); every thread gets the result. `scratch` holds 32.
template <typename T>
__device__ __forceinline__ T blockSum(T value, T *scratch) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int warps = blockDim.x / 32;
  __syncthreads(); // scratch may still be read by a previous reduction
  if (lane == 0)
    scratch[warp] = value;
  __syncthreads();
  T total = lane < warps ? scratch[lane] : T(0);
  for (int offset = 16; offset > 0; offset /= 2)
    total += __shfl_xor_sync(0xffffffffu, total, offset);
  return total;
}

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_FUSEDDEVICE_CUH
