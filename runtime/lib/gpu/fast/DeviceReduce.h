//===- DeviceReduce.h - warp reductions and packed loads --------*- C++ -*-===//
//
// Private to the fast GPU kernels (runtime/lib/gpu/fast/, CUDA only): the
// building blocks every memory-bound kernel here uses, written once.
//
//   - Scalar conversions between the float storage types (f32, bf16, f16)
//     and f32, the compute type of every fast kernel (design.md §4).
//   - Packs: kPack = 8 consecutive elements of any storage type moved as
//     128-bit loads and stores (one for bf16/f16, two for f32) and widened
//     to f32 in registers, so bf16 is read as bf16, never copied to f32.
//   - Warp reductions by shuffle (a fixed xor tree: the result depends on
//     the data and the thread layout only, so it is deterministic), and the
//     reduction of a row spread over several warps of a block through shared
//     memory, in warp order.
//   - RowLayout: which threads own which row (a warp per row for narrow
//     rows, a block per row for wide ones), and forEachPack, the loop over a
//     row's elements in packs when the row is 16-byte aligned and one by one
//     otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_DEVICEREDUCE_H
#define RTXRT_LIB_GPU_FAST_DEVICEREDUCE_H

#if !defined(__CUDACC__)
#error "DeviceReduce.h is CUDA only: the emulation runs the portable bodies"
#endif

#include "rtxrt/core/Tensor.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace rtxrt {
namespace gpu {
namespace fast {

constexpr int kWarpSize = 32;
/// Elements per pack: 16 bytes of bf16/f16, 32 bytes (two 128-bit
/// transactions) of f32. One pack size for every storage type lets a kernel
/// read bf16 and write f32 (or the reverse) in the same loop.
constexpr int kPack = 8;

// --- scalar conversions ------------------------------------------------------

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }

/// f32 to the storage type, rounded to nearest even (as storeElement and the
/// CPU's floatToBF16 round).
template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) {
  return __float2half_rn(v);
}

/// Element i of a float buffer whose dtype is only known at run time (a
/// scale or bias vector, a scalar operand): a switch that is uniform across
/// the warp, for small operands that stay in cache.
__device__ __forceinline__ float loadFloatAs(const void *p, DType dtype,
                                             int64_t i) {
  switch (dtype) {
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case DType::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
  default:
    return static_cast<const float *>(p)[i];
  }
}

// --- packs of kPack elements
// --------------------------------------------------

/// kPack elements of T, 16-byte aligned, so that the compiler moves them as
/// 128-bit loads and stores (two for f32).
template <typename T> struct alignas(16) Pack { T v[kPack]; };

/// Whether `p` may be read as packs (16-byte aligned; a device allocation
/// always is, a view at an odd offset may not be).
inline bool isPackAligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Loads N elements starting at p into f32 registers: one pack (N = kPack,
/// p pack-aligned) or one element (N = 1, the scalar path of unaligned rows
/// and tails).
template <int N, typename T>
__device__ __forceinline__ void loadPack(const T *p, float (&out)[N]) {
  if constexpr (N == kPack) {
    Pack<T> pack = *reinterpret_cast<const Pack<T> *>(p);
#pragma unroll
    for (int k = 0; k < N; ++k)
      out[k] = toFloat(pack.v[k]);
  } else {
    static_assert(N == 1, "a pack or one element");
    out[0] = toFloat(*p);
  }
}

/// Stores N f32 values to p, rounded to T (the same two shapes as loadPack).
template <int N, typename T>
__device__ __forceinline__ void storePack(T *p, const float (&in)[N]) {
  if constexpr (N == kPack) {
    Pack<T> pack;
#pragma unroll
    for (int k = 0; k < N; ++k)
      pack.v[k] = fromFloat<T>(in[k]);
    *reinterpret_cast<Pack<T> *>(p) = pack;
  } else {
    static_assert(N == 1, "a pack or one element");
    *p = fromFloat<T>(in[0]);
  }
}

// --- warp and row reductions
// --------------------------------------------------

struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
/// fmaxf skips NaN as math::laneMax does (the portable rows' max).
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return fmaxf(a, b);
  }
};

/// The reduction of v over the 32 lanes of a warp by an xor butterfly:
/// every lane gets the result, and the order of operations is fixed.
template <typename T, typename Op>
__device__ __forceinline__ T warpReduce(T v, Op op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
template <typename T> __device__ __forceinline__ T warpSum(T v) {
  return warpReduce(v, SumOp());
}
__device__ __forceinline__ float warpMax(float v) {
  return warpReduce(v, MaxOp());
}

/// Which threads of a block own which row. Every launch of the row kernels
/// has kRowThreads threads per block; a row is owned either by one warp
/// (narrow rows: the block holds kRowThreads / 32 rows and reductions are
/// shuffles only) or by the whole block (wide rows: shuffles, then the warps'
/// partials through shared memory).
constexpr int kRowThreads = 256;
constexpr int kWarpsPerBlock = kRowThreads / kWarpSize;
/// Rows up to this width get a warp each (at most 32 elements per lane).
constexpr int64_t kWarpRowMax = 1024;

struct RowLayout {
  bool warpPerRow;
  /// Threads per row, and this thread's index among them.
  int width, lane;
  /// The first row of this thread and the distance to its next one (the
  /// grid strides over the rows when there are more than blocks).
  int64_t first, stride;

  __device__ __forceinline__ static RowLayout of(bool warpPerRow) {
    RowLayout l;
    l.warpPerRow = warpPerRow;
    if (warpPerRow) {
      l.width = kWarpSize;
      l.lane = threadIdx.x % kWarpSize;
      l.first = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock +
                threadIdx.x / kWarpSize;
      l.stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
    } else {
      l.width = kRowThreads;
      l.lane = threadIdx.x;
      l.first = blockIdx.x;
      l.stride = gridDim.x;
    }
    return l;
  }
};

/// Host side: a row layout for rows of `d` elements, and the grid of a
/// kernel over `rows` of them (capped: the row loop strides over the rest).
inline bool warpPerRowFor(int64_t d) { return d <= kWarpRowMax; }
inline unsigned rowGridFor(int64_t rows, bool warpPerRow) {
  int64_t blocks =
      warpPerRow ? (rows + kWarpsPerBlock - 1) / kWarpsPerBlock : rows;
  const int64_t cap = 1 << 20;
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

/// The reduction of v over the threads that own a row (see RowLayout). In
/// block mode every thread of the block must call it (it synchronises the
/// block); `scratch` is kWarpsPerBlock elements of shared memory. The
/// partials are combined in warp order: deterministic.
template <typename T, typename Op>
__device__ __forceinline__ T rowReduce(const RowLayout &l, T v, T *scratch,
                                       Op op) {
  v = warpReduce(v, op);
  if (l.warpPerRow)
    return v;
  __syncthreads(); // the previous reduction's readers are done with scratch
  if (threadIdx.x % kWarpSize == 0)
    scratch[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  T r = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarpsPerBlock; ++w)
    r = op(r, scratch[w]);
  return r;
}

/// The reduction of v over all threads of a block (blockDim.x a multiple of
/// 32, at most 1024), every thread getting the result: shuffles, then the
/// warps' partials in warp order. `scratch` is 32 elements of shared memory;
/// every thread of the block must call it.
template <typename T, typename Op>
__device__ __forceinline__ T blockReduce(T v, T *scratch, Op op) {
  v = warpReduce(v, op);
  int warps = blockDim.x / kWarpSize;
  __syncthreads();
  if (threadIdx.x % kWarpSize == 0)
    scratch[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < warps; ++w)
    r = op(r, scratch[w]);
  return r;
}

/// How a row is split into packs. Rows of a width that is not a multiple of
/// kPack start at any element, so each row has its own head: the elements
/// before its first 16-byte boundary (fewer than kPack), read one by one,
/// then whole packs, then a tail of fewer than kPack. Every row operand of a
/// kernel has one element type and a 16-byte aligned base, so the row's
/// operands share the head. When a base is not aligned (a view at an odd
/// offset), nothing is packed.
struct RowPacks {
  bool packed;
  int64_t head;

  /// The split of the row of d elements starting at `row`; `basesAligned`:
  /// every row operand's base is 16-byte aligned (decided once per launch).
  template <typename T>
  __device__ __forceinline__ static RowPacks of(bool basesAligned, const T *row,
                                                int64_t d) {
    if (!basesAligned)
      return {false, 0};
    // A multiple of sizeof(T): the base is aligned, the row offset is whole
    // elements.
    int64_t misaligned = reinterpret_cast<uintptr_t>(row) % 16;
    int64_t head =
        misaligned ? (16 - misaligned) / static_cast<int64_t>(sizeof(T)) : 0;
    return {true, head < d ? head : d};
  }
};

/// Calls f(i, std::integral_constant<int, N>) over the elements of a row of
/// d elements that this thread owns (i is the column): the head one element
/// per lane, then packs of kPack (N = kPack) from a 16-byte boundary, then
/// the tail one element at a time (N = 1); everything one at a time when
/// the row is not packed.
template <typename F>
__device__ __forceinline__ void forEachPack(const RowLayout &l, int64_t d,
                                            const RowPacks &p, F &&f) {
  if (!p.packed) {
    for (int64_t i = l.lane; i < d; i += l.width)
      f(i, std::integral_constant<int, 1>());
    return;
  }
  if (l.lane < p.head) // head < kPack <= lanes per row
    f(static_cast<int64_t>(l.lane), std::integral_constant<int, 1>());
  int64_t end = p.head + (d - p.head) / kPack * kPack;
  for (int64_t i = p.head + static_cast<int64_t>(l.lane) * kPack; i < end;
       i += static_cast<int64_t>(l.width) * kPack)
    f(i, std::integral_constant<int, kPack>());
  for (int64_t i = end + l.lane; i < d; i += l.width)
    f(i, std::integral_constant<int, 1>());
}

// --- flat (elementwise) loops
// --------------------------------------------------

/// Calls f(i, std::integral_constant<int, N>) over [0, n) split across the
/// grid: whole packs first (when `packed`: every operand pack-aligned), then
/// the tail one element at a time. Each element is visited exactly once.
template <typename F>
__device__ __forceinline__ void forEachFlat(int64_t n, bool packed, F &&f) {
  int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t packs = packed ? n / kPack : 0;
  for (int64_t p = thread; p < packs; p += threads)
    f(p * kPack, std::integral_constant<int, kPack>());
  for (int64_t i = packs * kPack + thread; i < n; i += threads)
    f(i, std::integral_constant<int, 1>());
}

/// The grid of a flat kernel over n elements with `threads` per block.
inline unsigned flatGridFor(int64_t n, int threads) {
  int64_t work = (n + kPack - 1) / kPack;
  int64_t blocks = (work + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  const int64_t cap = 1 << 16; // the grid stride covers the rest
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

/// Calls fn<T>(args...) with T the CUDA storage type of a float dtype the
/// fast kernels cover (f32, bf16, f16).
#define RTX_FAST_FLOAT_TYPE(dtype, fn, ...)                                    \
  ((dtype) == ::rtxrt::DType::BF16  ? fn<__nv_bfloat16>(__VA_ARGS__)           \
   : (dtype) == ::rtxrt::DType::F16 ? fn<__half>(__VA_ARGS__)                  \
                                    : fn<float>(__VA_ARGS__))

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_DEVICEREDUCE_H
