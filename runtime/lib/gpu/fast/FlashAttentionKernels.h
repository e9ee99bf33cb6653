//===- FlashAttentionKernels.h - the flash-attention kernels ----*- C++ -*-===//
//
// Private to the GPU runtime: the kernels of FlashAttention.cu (which
// explains them), in a header so that one source serves two compilers:
// nvcc, for librtxrt_cuda, and a host C++ compiler for the CTA emulation of
// test/Unit/Gpu/FlashAttentionEmulationTest.cpp, which runs these kernels
// on CPU threads (a thread per CUDA thread, real barriers, the tensor
// cores' fragments exchanged as the PTX ISA lays them out) against the CPU
// kernels, where no GPU is. Compiled without nvcc, the includer provides
// the CUDA names used here (CtaEmulation.h).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_FLASHATTENTIONKERNELS_H
#define RTXRT_LIB_GPU_FAST_FLASHATTENTIONKERNELS_H

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
/// The CTA's dynamic shared memory.
#define RTX_FLASH_SHARED_MEMORY(name)                                          \
  extern __shared__ __align__(16) unsigned char name[]
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace rtxrt {
namespace gpu {
namespace fast {
namespace flash {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 16;
constexpr int kTileRows = kWarps * kRowsPerWarp; // rows a CTA owns
constexpr int kStreamRows = 64;                  // rows of a streamed tile
constexpr double kLog2e = 1.4426950408889634;    // softmax in base 2

// --- element types -----------------------------------------------------------

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float x) {
  return __float2half(x);
}

__device__ __forceinline__ uint32_t bitsOf(__nv_bfloat16 x) {
  return __bfloat16_as_ushort(x);
}
__device__ __forceinline__ uint32_t bitsOf(__half x) {
  return __half_as_ushort(x);
}

/// Shared-memory rows are padded by 16 bytes: rows stay 16-byte aligned for
/// the vector loads, and the fragment reads of 8 rows x 4 lanes fall in
/// distinct banks.
template <typename T> constexpr int paddedRow(int columns) {
  return columns + 16 / static_cast<int>(sizeof(T));
}

// --- operands of a warp GEMM in shared memory --------------------------------

/// Element (i, k) of an operand, k the contracted index and i the row of A
/// or the column of B, stored with k contiguous: p[i * ld + k].
template <typename T> struct KContiguous {
  const T *p;
  int ld;
  __device__ __forceinline__ T at(int i, int k) const { return p[i * ld + k]; }
  /// Elements (i, k) and (i, k + 1) packed low to high (k even).
  __device__ __forceinline__ uint32_t pair(int i, int k) const {
    return *reinterpret_cast<const uint32_t *>(p + i * ld + k);
  }
};

/// The same with i contiguous: p[k * ld + i].
template <typename T> struct IContiguous {
  const T *p;
  int ld;
  __device__ __forceinline__ T at(int i, int k) const { return p[k * ld + i]; }
  __device__ __forceinline__ uint32_t pair(int i, int k) const {
    return bitsOf(at(i, k)) | (bitsOf(at(i, k + 1)) << 16);
  }
};

// --- warp GEMMs --------------------------------------------------------------

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2],
                                         __nv_bfloat16) {
#if defined(__CUDACC__)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
#else
  emulatedMma16816(c, a, b, true);
#endif
}
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2], __half) {
#if defined(__CUDACC__)
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
#else
  emulatedMma16816(c, a, b, false);
#endif
}

/// c[16 x N] += A[16 x K] B[K x N], N = 8 * NT, on the tensor cores. The
/// fragments (PTX ISA): A register r holds row g + 8 (r % 2), columns
/// 2t + 8 (r / 2) + {0, 1}; B register r holds column g, rows
/// 2t + 8 r + {0, 1}.
template <int NT, int K, typename T, typename A, typename B>
__device__ __forceinline__ void warpGemmMma(float (&c)[NT][4], const A &a,
                                            const B &b) {
  static_assert(K % 16 == 0, "the contraction must be a multiple of 16");
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < K; kk += 16) {
    uint32_t af[4] = {a.pair(g, kk + 2 * t), a.pair(g + 8, kk + 2 * t),
                      a.pair(g, kk + 8 + 2 * t), a.pair(g + 8, kk + 8 + 2 * t)};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      uint32_t bf[2] = {b.pair(nt * 8 + g, kk + 2 * t),
                        b.pair(nt * 8 + g, kk + 8 + 2 * t)};
      mma16816(c[nt], af, bf, T());
    }
  }
}

/// The same product in f32 FMAs, each lane computing its own elements of
/// the accumulator layout.
template <int NT, int K, typename A, typename B>
__device__ __forceinline__ void warpGemmFma(float (&c)[NT][4], const A &a,
                                            const B &b) {
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll 4
  for (int k = 0; k < K; ++k) {
    float a0 = a.at(g, k), a1 = a.at(g + 8, k);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float b0 = b.at(nt * 8 + 2 * t, k), b1 = b.at(nt * 8 + 2 * t + 1, k);
      c[nt][0] = fmaf(a0, b0, c[nt][0]);
      c[nt][1] = fmaf(a0, b1, c[nt][1]);
      c[nt][2] = fmaf(a1, b0, c[nt][2]);
      c[nt][3] = fmaf(a1, b1, c[nt][3]);
    }
  }
}

template <int NT, int K, typename T, typename A, typename B>
__device__ __forceinline__ void warpGemm(float (&c)[NT][4], const A &a,
                                         const B &b) {
  if constexpr (std::is_same<T, float>::value)
    warpGemmFma<NT, K>(c, a, b);
  else
    warpGemmMma<NT, K, T>(c, a, b);
}

template <int NT> __device__ __forceinline__ void zero(float (&c)[NT][4]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      c[nt][e] = 0.0f;
}

/// The accumulator element e of tile nt: its row within the warp's 16 and
/// its column.
__device__ __forceinline__ int fragRow(int e) {
  return (threadIdx.x % 32) / 4 + (e / 2) * 8;
}
__device__ __forceinline__ int fragCol(int nt, int e) {
  return nt * 8 + 2 * (threadIdx.x % 4) + (e % 2);
}

/// Reductions over the 4 lanes that share an accumulator row.
__device__ __forceinline__ float rowMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float rowSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/// Stores a warp's accumulators as T into the 16 rows of shared memory at
/// `rows` (row stride ld).
template <typename T, int NT>
__device__ __forceinline__ void storeShared(T *rows, int ld,
                                            const float (&c)[NT][4]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      rows[fragRow(e) * ld + fragCol(nt, e)] = fromFloat<T>(c[nt][e]);
}

/// Writes a warp's 16 x D accumulators, times `factor`, as T into rows
/// [row0, row0 + 16) of the [rowLimit, D] matrix `out`, skipping rows at or
/// past rowLimit.
template <typename T, int NT>
__device__ __forceinline__ void
storeGlobal(T *out, int64_t row0, int64_t rowLimit, const float (&c)[NT][4],
            float factor) {
  constexpr int D = NT * 8;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    int64_t row = row0 + fragRow(e);
    if (row >= rowLimit)
      continue;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      out[row * D + fragCol(nt, e)] = fromFloat<T>(c[nt][e] * factor);
  }
}

// --- tiles from global memory ------------------------------------------------

/// Copies rows [row0, row0 + ROWS) of the [rowLimit, D] matrix `src` into
/// shared memory (row stride ld), 16 bytes a load; rows at or past
/// rowLimit are zeros.
template <int ROWS, int D, typename T>
__device__ __forceinline__ void loadTile(T *dst, int ld, const T *src,
                                         int64_t row0, int64_t rowLimit) {
  constexpr int kVector = 16 / sizeof(T);
  constexpr int kVectorsPerRow = D / kVector;
  static_assert(D % kVector == 0, "rows must be whole 16-byte vectors");
  for (int i = threadIdx.x; i < ROWS * kVectorsPerRow; i += kThreads) {
    int r = i / kVectorsPerRow, col = (i % kVectorsPerRow) * kVector;
    uint4 value = make_uint4(0u, 0u, 0u, 0u);
    if (row0 + r < rowLimit)
      value = *reinterpret_cast<const uint4 *>(src + (row0 + r) * D + col);
    *reinterpret_cast<uint4 *>(dst + r * ld + col) = value;
  }
}

/// Copies n floats of src from row0 (rows past rowLimit: 0) to dst.
__device__ __forceinline__ void loadRowValues(float *dst, int n,
                                              const float *src, int64_t row0,
                                              int64_t rowLimit) {
  for (int i = threadIdx.x; i < n; i += kThreads)
    dst[i] = row0 + i < rowLimit ? src[row0 + i] : 0.0f;
}

// --- the kernels -------------------------------------------------------------

struct FlashArgs {
  int64_t b, hq, hkv, group, sq, skv;
  bool causal;
  float scaleLog2; // scale * log2(e): softmax in base 2
};

/// The query tiles of a query-major kernel: a CTA per (query head, tile),
/// the tiles of a head in reverse order so that the longest causal ones
/// start first.
struct QueryTile {
  int64_t head;   // b * hq + h
  int64_t kvHead; // b * hkv + h / group
  int64_t row0;
};
__device__ __forceinline__ QueryTile queryTile(const FlashArgs &a) {
  int64_t tiles = (a.sq + kTileRows - 1) / kTileRows;
  int64_t head = blockIdx.x / tiles;
  int64_t tile = tiles - 1 - blockIdx.x % tiles;
  int64_t bi = head / a.hq, h = head % a.hq;
  return {head, bi * a.hkv + h / a.group, tile * kTileRows};
}

/// The keys a query tile's rows [row0, row0 + kTileRows) see: all, or up to
/// the diagonal (causal attention has Sq == Skv).
__device__ __forceinline__ int64_t keyEnd(const FlashArgs &a, int64_t row0) {
  int64_t diagonal = row0 + kTileRows;
  return a.causal && diagonal < a.skv ? diagonal : a.skv;
}

/// Whether query `row` sees key `key`.
__device__ __forceinline__ bool visible(const FlashArgs &a, int64_t row,
                                        int64_t key) {
  return row < a.sq && key < a.skv && !(a.causal && key > row);
}

template <typename T, int D> struct ForwardSmem {
  static constexpr int ldD = paddedRow<T>(D);
  static constexpr int ldP = paddedRow<T>(kStreamRows);
  static constexpr size_t bytes =
      sizeof(T) *
      (size_t(kTileRows + 2 * kStreamRows) * ldD + size_t(kTileRows) * ldP);
};

/// out = softmax(scale q k^T) v for one query tile; lse2 (when not null)
/// gets each row's log2 of sum(exp2(scale log2(e) q k^T)).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(FlashArgs a, const T *q, const T *k, const T *v, T *out,
                       float *lse2) {
  using S = ForwardSmem<T, D>;
  constexpr int NTD = D / 8, NTS = kStreamRows / 8;
  RTX_FLASH_SHARED_MEMORY(smem);
  T *qs = reinterpret_cast<T *>(smem);
  T *ks = qs + kTileRows * S::ldD;
  T *vs = ks + kStreamRows * S::ldD;
  T *ps = vs + kStreamRows * S::ldD;

  QueryTile tile = queryTile(a);
  const T *qHead = q + tile.head * a.sq * D;
  const T *kHead = k + tile.kvHead * a.skv * D;
  const T *vHead = v + tile.kvHead * a.skv * D;
  int warp = threadIdx.x / 32;
  int64_t warpRow0 = tile.row0 + warp * kRowsPerWarp;
  T *warpP = ps + warp * kRowsPerWarp * S::ldP;
  loadTile<kTileRows, D>(qs, S::ldD, qHead, tile.row0, a.sq);

  float o[NTD][4];
  zero(o);
  // Rows g and g + 8 of the warp's 16: running max (base 2, -inf before any
  // key) and this lane's part of the running sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  int64_t end = keyEnd(a, tile.row0);
  for (int64_t key0 = 0; key0 < end; key0 += kStreamRows) {
    __syncthreads(); // every warp is done with the last K, V and P tiles
    loadTile<kStreamRows, D>(ks, S::ldD, kHead, key0, a.skv);
    loadTile<kStreamRows, D>(vs, S::ldD, vHead, key0, a.skv);
    __syncthreads();

    float s[NTS][4];
    zero(s);
    warpGemm<NTS, D, T>(
        s, KContiguous<T>{qs + warp * kRowsPerWarp * S::ldD, S::ldD},
        KContiguous<T>{ks, S::ldD});
    float tileMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < NTS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int64_t row = warpRow0 + fragRow(e), key = key0 + fragCol(nt, e);
        // Rows past Sq keep their keys (their results are not written):
        // every row then has a finite maximum from the first tile on.
        bool seen = key < a.skv && !(a.causal && key > row);
        s[nt][e] = seen ? s[nt][e] * a.scaleLog2 : -INFINITY;
        tileMax[e / 2] = fmaxf(tileMax[e / 2], s[nt][e]);
      }
    // alpha rescales what was accumulated under the old maximum.
    float alpha[2], shift[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mNew = fmaxf(m[i], rowMax(tileMax[i]));
      // A row none of whose keys were seen yet stays at -inf; subtracting
      // 0 then keeps exp2 at 0 instead of NaN.
      shift[i] = mNew == -INFINITY ? 0.0f : mNew;
      alpha[i] = exp2f(m[i] - shift[i]);
      m[i] = mNew;
    }
    float rowPart[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nt = 0; nt < NTS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nt][e] = exp2f(s[nt][e] - shift[e / 2]);
        rowPart[e / 2] += s[nt][e];
      }
#pragma unroll
    for (int i = 0; i < 2; ++i)
      l[i] = l[i] * alpha[i] + rowPart[i];
#pragma unroll
    for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[nt][e] *= alpha[e / 2];

    storeShared<T>(warpP, S::ldP, s);
    __syncwarp(); // the warp's P rows are read by all its lanes
    warpGemm<NTD, kStreamRows, T>(o, KContiguous<T>{warpP, S::ldP},
                                  IContiguous<T>{vs, S::ldD});
  }

  float inverse[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float sum = rowSum(l[i]);
    inverse[i] = sum > 0.0f ? 1.0f / sum : 0.0f;
    int64_t row = warpRow0 + fragRow(2 * i);
    if (lse2 && threadIdx.x % 4 == 0 && row < a.sq)
      lse2[tile.head * a.sq + row] = m[i] + log2f(sum);
  }
#pragma unroll
  for (int nt = 0; nt < NTD; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[nt][e] *= inverse[e / 2];
  storeGlobal<T>(out + tile.head * a.sq * D, warpRow0, a.sq, o, 1.0f);
}

/// delta[row] = sum(dout[row, :] * out[row, :]), one warp per row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rowDotKernel(int64_t rows, int d, const T *dout, const T *out,
                 float *delta) {
  int64_t row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows)
    return; // whole warps leave: no shuffle below misses a lane
  float sum = 0.0f;
  for (int i = threadIdx.x % 32; i < d; i += 32)
    sum += toFloat(dout[row * d + i]) * toFloat(out[row * d + i]);
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0)
    delta[row] = sum;
}

// Both backward kernels use GradSmem's layout, the key kernel with the
// roles of the two tile heights swapped: they must be equal.
static_assert(kTileRows == kStreamRows, "GradSmem assumes square tiles");

template <typename T, int D> struct GradSmem {
  static constexpr int ldD = paddedRow<T>(D);
  static constexpr int ldX = paddedRow<T>(kStreamRows);
  // Four [64, D] operand tiles, one [64, 64] tile of P or dS (a warp's 16
  // rows each), and the streamed rows' lse2 and delta.
  static constexpr size_t bytes =
      sizeof(T) * (size_t(2 * kTileRows + 2 * kStreamRows) * ldD +
                   size_t(kTileRows) * ldX) +
      sizeof(float) * 2 * kStreamRows;
};

/// Pointers of the backward kernels.
template <typename T> struct GradPointers {
  const T *q, *k, *v, *dout;
  const float *lse2, *delta; // [B * Hq * Sq]
  T *dq, *dk, *dv;
};

/// dq = scale dS k for one query tile, dS = P (dout v^T - delta),
/// P = exp2(scale log2(e) q k^T - lse2).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    flashGradQueryKernel(FlashArgs a, GradPointers<T> p, float scale) {
  using S = GradSmem<T, D>;
  constexpr int NTD = D / 8, NTS = kStreamRows / 8;
  RTX_FLASH_SHARED_MEMORY(smem);
  T *qs = reinterpret_cast<T *>(smem);
  T *dos = qs + kTileRows * S::ldD;
  T *ks = dos + kTileRows * S::ldD;
  T *vs = ks + kStreamRows * S::ldD;
  T *xs = vs + kStreamRows * S::ldD;
  float *lseS = reinterpret_cast<float *>(xs + kTileRows * S::ldX);
  float *deltaS = lseS + kTileRows;

  QueryTile tile = queryTile(a);
  int64_t rowBase = tile.head * a.sq; // of this head in [B * Hq * Sq]
  const T *kHead = p.k + tile.kvHead * a.skv * D;
  const T *vHead = p.v + tile.kvHead * a.skv * D;
  int warp = threadIdx.x / 32;
  int64_t warpRow0 = tile.row0 + warp * kRowsPerWarp;
  T *warpQ = qs + warp * kRowsPerWarp * S::ldD;
  T *warpDout = dos + warp * kRowsPerWarp * S::ldD;
  T *warpX = xs + warp * kRowsPerWarp * S::ldX;
  loadTile<kTileRows, D>(qs, S::ldD, p.q + rowBase * D, tile.row0, a.sq);
  loadTile<kTileRows, D>(dos, S::ldD, p.dout + rowBase * D, tile.row0, a.sq);
  loadRowValues(lseS, kTileRows, p.lse2 + rowBase, tile.row0, a.sq);
  loadRowValues(deltaS, kTileRows, p.delta + rowBase, tile.row0, a.sq);

  float dq[NTD][4];
  zero(dq);
  int64_t end = keyEnd(a, tile.row0);
  for (int64_t key0 = 0; key0 < end; key0 += kStreamRows) {
    __syncthreads(); // every warp is done with the last K and V tiles
    loadTile<kStreamRows, D>(ks, S::ldD, kHead, key0, a.skv);
    loadTile<kStreamRows, D>(vs, S::ldD, vHead, key0, a.skv);
    __syncthreads();

    float s[NTS][4], dp[NTS][4];
    zero(s);
    zero(dp);
    warpGemm<NTS, D, T>(s, KContiguous<T>{warpQ, S::ldD},
                        KContiguous<T>{ks, S::ldD});
    warpGemm<NTS, D, T>(dp, KContiguous<T>{warpDout, S::ldD},
                        KContiguous<T>{vs, S::ldD});
#pragma unroll
    for (int nt = 0; nt < NTS; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = warp * kRowsPerWarp + fragRow(e);
        int64_t row = tile.row0 + r, key = key0 + fragCol(nt, e);
        float prob = visible(a, row, key)
                         ? exp2f(s[nt][e] * a.scaleLog2 - lseS[r])
                         : 0.0f;
        s[nt][e] = prob * (dp[nt][e] - deltaS[r]); // dS
      }
    storeShared<T>(warpX, S::ldX, s);
    __syncwarp(); // the warp's dS rows are read by all its lanes
    warpGemm<NTD, kStreamRows, T>(dq, KContiguous<T>{warpX, S::ldX},
                                  IContiguous<T>{ks, S::ldD});
    __syncwarp(); // all lanes read dS before the next tile overwrites it
  }
  storeGlobal<T>(p.dq + rowBase * D, warpRow0, a.sq, dq, scale);
}

/// dk = scale dS^T q and dv = P^T dout for one tile of 64 keys of one
/// key/value head, summed over the group's query heads.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    flashGradKeyKernel(FlashArgs a, GradPointers<T> p, float scale) {
  using S = GradSmem<T, D>;
  constexpr int NTD = D / 8, NTQ = kStreamRows / 8;
  RTX_FLASH_SHARED_MEMORY(smem);
  T *ks = reinterpret_cast<T *>(smem);
  T *vs = ks + kTileRows * S::ldD;
  T *qs = vs + kTileRows * S::ldD;
  T *dos = qs + kStreamRows * S::ldD;
  T *xs = dos + kStreamRows * S::ldD;
  float *lseS = reinterpret_cast<float *>(xs + kTileRows * S::ldX);
  float *deltaS = lseS + kStreamRows;

  int64_t tiles = (a.skv + kTileRows - 1) / kTileRows;
  int64_t kvHead = blockIdx.x / tiles; // b * hkv + kv head
  int64_t key0 = (blockIdx.x % tiles) * kTileRows;
  int64_t bi = kvHead / a.hkv, kh = kvHead % a.hkv;
  int warp = threadIdx.x / 32;
  int64_t warpKey0 = key0 + warp * kRowsPerWarp;
  T *warpK = ks + warp * kRowsPerWarp * S::ldD;
  T *warpV = vs + warp * kRowsPerWarp * S::ldD;
  T *warpX = xs + warp * kRowsPerWarp * S::ldX;
  loadTile<kTileRows, D>(ks, S::ldD, p.k + kvHead * a.skv * D, key0, a.skv);
  loadTile<kTileRows, D>(vs, S::ldD, p.v + kvHead * a.skv * D, key0, a.skv);

  float dk[NTD][4], dv[NTD][4];
  zero(dk);
  zero(dv);
  // Causal: query rows before the key tile's first key see none of it
  // (Sq == Skv and the tiles have the same height, so start at its tile).
  int64_t firstRow = a.causal ? key0 : 0;
  for (int64_t hg = 0; hg < a.group; ++hg) {
    int64_t rowBase = (bi * a.hq + kh * a.group + hg) * a.sq;
    for (int64_t row0 = firstRow; row0 < a.sq; row0 += kStreamRows) {
      __syncthreads(); // every warp is done with the last Q and dO tiles
      loadTile<kStreamRows, D>(qs, S::ldD, p.q + rowBase * D, row0, a.sq);
      loadTile<kStreamRows, D>(dos, S::ldD, p.dout + rowBase * D, row0, a.sq);
      loadRowValues(lseS, kStreamRows, p.lse2 + rowBase, row0, a.sq);
      loadRowValues(deltaS, kStreamRows, p.delta + rowBase, row0, a.sq);
      __syncthreads();

      // The warp's 16 keys against the tile's rows: S^T, then P^T.
      float st[NTQ][4];
      zero(st);
      warpGemm<NTQ, D, T>(st, KContiguous<T>{warpK, S::ldD},
                          KContiguous<T>{qs, S::ldD});
#pragma unroll
      for (int nt = 0; nt < NTQ; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int c = fragCol(nt, e);
          int64_t key = warpKey0 + fragRow(e), row = row0 + c;
          st[nt][e] = visible(a, row, key)
                          ? exp2f(st[nt][e] * a.scaleLog2 - lseS[c])
                          : 0.0f;
        }
      storeShared<T>(warpX, S::ldX, st);
      __syncwarp(); // the warp's P^T rows are read by all its lanes
      warpGemm<NTD, kStreamRows, T>(dv, KContiguous<T>{warpX, S::ldX},
                                    IContiguous<T>{dos, S::ldD});
      // dP^T = v dout^T for the warp's keys, then dS^T in place of P^T.
      float dpt[NTQ][4];
      zero(dpt);
      warpGemm<NTQ, D, T>(dpt, KContiguous<T>{warpV, S::ldD},
                          KContiguous<T>{dos, S::ldD});
#pragma unroll
      for (int nt = 0; nt < NTQ; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          st[nt][e] *= dpt[nt][e] - deltaS[fragCol(nt, e)];
      __syncwarp(); // all lanes read P^T before it is overwritten
      storeShared<T>(warpX, S::ldX, st);
      __syncwarp();
      warpGemm<NTD, kStreamRows, T>(dk, KContiguous<T>{warpX, S::ldX},
                                    IContiguous<T>{qs, S::ldD});
      __syncwarp(); // all lanes read dS^T before the next tile's P^T
    }
  }
  storeGlobal<T>(p.dk + kvHead * a.skv * D, warpKey0, a.skv, dk, scale);
  storeGlobal<T>(p.dv + kvHead * a.skv * D, warpKey0, a.skv, dv, 1.0f);
}

// --- launch geometry (host) --------------------------------------------------
// Dims is rtxrt::detail::AttentionDims (kernels/KernelUtils.h), a template
// parameter so that this header needs no runtime header.

template <typename Dims>
FlashArgs flashArgs(const Dims &s, bool causal, double scale) {
  return {s.b,  s.hq,  s.hkv,  s.group,
          s.sq, s.skv, causal, float(scale * kLog2e)};
}

inline int64_t tilesOf(int64_t rows) {
  return (rows + kTileRows - 1) / kTileRows;
}
/// CTAs of flashForwardKernel and flashGradQueryKernel (a query tile each).
template <typename Dims> int64_t queryTileCtas(const Dims &s) {
  return s.b * s.hq * tilesOf(s.sq);
}
/// CTAs of flashGradKeyKernel (a key tile each).
template <typename Dims> int64_t keyTileCtas(const Dims &s) {
  return s.b * s.hkv * tilesOf(s.skv);
}
/// CTAs of rowDotKernel over `rows` rows (a warp each).
inline int64_t rowDotCtas(int64_t rows) { return (rows + kWarps - 1) / kWarps; }

} // namespace flash
} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_FLASHATTENTIONKERNELS_H
