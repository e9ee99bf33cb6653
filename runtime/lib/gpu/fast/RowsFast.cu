//===- RowsFast.cu - layernorm, rmsnorm, softmax, cross-entropy -----------===//
//
// The fast row kernels (CUDA only; the portable references are Rows.cu's).
// One warp owns a row of up to 1024 elements (eight rows per 256-thread
// block), one 256-thread block owns a wider row; statistics are reduced by
// warp shuffles and, for block rows, through shared memory in warp order
// (DeviceReduce.h), so every result is deterministic. Operands are read in
// their storage dtype (f32, bf16 or f16) as packs of 8 (128-bit loads) from
// each row's first 16-byte boundary, the few elements before it and after
// the last whole pack one at a time (RowPacks), and computed in f32; nothing
// is copied to f32 first. Rows are re-read from memory for each pass (the
// second and later passes hit L1/L2 for rows of a few KiB).
//
// The scale and bias gradients of the normalisations are column sums over
// all rows: stage 1 sums fixed chunks of rows per column into f32 partials,
// stage 2 adds the chunks in order in double. The chunking depends on the
// row count only, so the result does not depend on the device.
//
//===----------------------------------------------------------------------===//

#include "DeviceReduce.h"
#include "MemoryBound.h"

#include "../DeviceMath.h"
#include "../Portable.h"

#include <initializer_list>

using namespace rtxrt;
using namespace rtxrt::gpu::fast;
namespace gd = rtxrt::gpu::detail;

namespace {

/// The rows of a launch and how its threads walk them.
struct RowShape {
  int64_t rows, d;
  bool warpPerRow;
  /// Every row operand's base 16-byte aligned: rows are read in packs
  /// (RowPacks).
  bool packed;
};

RowShape rowShapeOf(int64_t rows, int64_t d,
                    std::initializer_list<const void *> rowOperands) {
  bool aligned = true;
  for (const void *p : rowOperands)
    aligned = aligned && isPackAligned(p);
  return {rows, d, warpPerRowFor(d), aligned};
}

/// A vector of the row width (scale, bias) of any covered dtype; absent when
/// p is null.
struct Weight {
  const void *p;
  DType dtype;
  __device__ __forceinline__ float at(int64_t i) const {
    return loadFloatAs(p, dtype, i);
  }
};

Weight weightOf(const Tensor &t) {
  return t.defined() ? Weight{t.raw(), t.dtype()} : Weight{nullptr, DType::F32};
}

/// Launches a row kernel over s.rows rows (nothing for an empty tensor).
template <typename... Params, typename... Args>
void launchRows(const RowShape &s, void (*kernel)(Params...), Args... args) {
  if (s.rows == 0 || s.d == 0)
    return;
  kernel<<<rowGridFor(s.rows, s.warpPerRow), kRowThreads, 0, gd::stream()>>>(
      args...);
  gd::check(cudaGetLastError(), "a fast row kernel launch");
}

/// A row's statistics. The mean is m + shift: m is the f32 mean, shift the
/// mean of x - m, which recovers what rounding the mean to f32 lost (x - m
/// is nearly exact for x near m). Centring by m and then by shift keeps
/// rows whose mean is large against their spread as accurate as the
/// portable kernels' centring in double (math::layerNormValue).
struct RowStats {
  float mean, shift, rstd;
  __device__ __forceinline__ float normalise(float x) const {
    return ((x - mean) - shift) * rstd;
  }
};

/// The row's statistics (mean 0 when not centred) and rstd = 1/sqrt(mean((x
/// - mean)^2) + eps), from centred values as the portable normStatistics (no
/// E[x^2] - mean^2 cancellation: the variance of x - m less shift^2, where
/// shift is within rounding of zero).
template <typename T>
__device__ RowStats rowStatistics(const RowLayout &l, const T *xr,
                                  const RowShape &s, float epsilon,
                                  bool centred, float *scratch) {
  const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
  const float inv = 1.0f / static_cast<float>(s.d);
  float m = 0.0f;
  if (centred) {
    float sum = 0.0f;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N];
      loadPack<N>(xr + i, v);
#pragma unroll
      for (int k = 0; k < N; ++k)
        sum += v[k];
    });
    m = rowReduce(l, sum, scratch, SumOp()) * inv;
  }
  float first = 0.0f, second = 0.0f;
  forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    loadPack<N>(xr + i, v);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      float c = v[k] - m;
      first += c;
      second += c * c;
    }
  });
  float shift = centred ? rowReduce(l, first, scratch, SumOp()) * inv : 0.0f;
  float variance = rowReduce(l, second, scratch, SumOp()) * inv - shift * shift;
  return {m, shift, 1.0f / sqrtf(fmaxf(variance, 0.0f) + epsilon)};
}

/// y = (x - mean) rstd scale (+ bias): rtx.layernorm (centred) and
/// rtx.rmsnorm (mean 0, no bias).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    normKernel(const T *x, Weight scale, Weight bias, T *y, RowShape s,
               float epsilon, bool centred) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  for (int64_t r = l.first; r < s.rows; r += l.stride) {
    const T *xr = x + r * s.d;
    T *yr = y + r * s.d;
    const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
    RowStats st = rowStatistics(l, xr, s, epsilon, centred, scratch);
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N], out[N];
      loadPack<N>(xr + i, v);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        out[k] = st.normalise(v[k]) * scale.at(i + k);
        if (bias.p)
          out[k] += bias.at(i + k);
      }
      storePack<N>(yr + i, out);
    });
  }
}

/// dx of rtx.layernorm_grad / rtx.rmsnorm_grad per row, with g = dy scale
/// and xhat = (x - mean) rstd: dx = rstd (g - mean(g) - xhat mean(g xhat))
/// (layernorm) or rstd (g - xhat mean(g xhat)) (rmsnorm: the portable
/// s g - x s^3 mean(g x), rearranged). Also writes each row's statistics for
/// the column sums.
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    normGradRowsKernel(const T *x, const T *dy, Weight scale, T *dx,
                       RowStats *statsOut, RowShape s, float epsilon,
                       bool centred) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  for (int64_t r = l.first; r < s.rows; r += l.stride) {
    const T *xr = x + r * s.d, *dyr = dy + r * s.d;
    T *dxr = dx + r * s.d;
    const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
    RowStats st = rowStatistics(l, xr, s, epsilon, centred, scratch);
    float sumG = 0.0f, sumGX = 0.0f;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N], g[N];
      loadPack<N>(xr + i, v);
      loadPack<N>(dyr + i, g);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        float gk = g[k] * scale.at(i + k);
        sumG += gk;
        sumGX += gk * st.normalise(v[k]);
      }
    });
    float inv = 1.0f / static_cast<float>(s.d);
    float meanG = centred ? rowReduce(l, sumG, scratch, SumOp()) * inv : 0.0f;
    float meanGX = rowReduce(l, sumGX, scratch, SumOp()) * inv;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N], g[N], out[N];
      loadPack<N>(xr + i, v);
      loadPack<N>(dyr + i, g);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        float xhat = st.normalise(v[k]);
        out[k] = st.rstd * (g[k] * scale.at(i + k) - meanG - xhat * meanGX);
      }
      storePack<N>(dxr + i, out);
    });
    if (l.lane == 0)
      statsOut[r] = st;
  }
}

/// Stage 1 of the scale/bias gradients: for column c and chunk k (blockIdx.y)
/// the sums over the chunk's rows, in row order, of dy xhat and dy.
template <typename T>
__global__ void
normColumnPartialsKernel(const T *x, const T *dy, const RowStats *stats,
                         float *partialScale, float *partialBias, int64_t rows,
                         int64_t d, int64_t rowsPerChunk) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t chunk = blockIdx.y;
  if (c >= d)
    return;
  int64_t begin = chunk * rowsPerChunk;
  int64_t end = begin + rowsPerChunk < rows ? begin + rowsPerChunk : rows;
  float ds = 0.0f, db = 0.0f;
  for (int64_t r = begin; r < end; ++r) {
    float g = toFloat(dy[r * d + c]);
    ds += g * stats[r].normalise(toFloat(x[r * d + c]));
    db += g;
  }
  partialScale[chunk * d + c] = ds;
  if (partialBias)
    partialBias[chunk * d + c] = db;
}

/// Stage 2: the chunks of column c added in chunk order, in double, stored in
/// the scale's dtype.
__global__ void normColumnTotalsKernel(const float *partialScale,
                                       const float *partialBias, void *dscale,
                                       void *dbias, int outType, int64_t chunks,
                                       int64_t d) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= d)
    return;
  double ds = 0.0, db = 0.0;
  for (int64_t k = 0; k < chunks; ++k) {
    ds += partialScale[k * d + c];
    if (partialBias)
      db += partialBias[k * d + c];
  }
  gd::storeElement(dscale, outType, c, ds);
  if (dbias)
    gd::storeElement(dbias, outType, c, db);
}

/// The max of a row and the sum of exp(x - max) (math::rowExp, the portable
/// rows' exp). A row of only -inf gives max -inf and a NaN sum, as the
/// portable kernels do.
template <typename T>
__device__ void softmaxStatistics(const RowLayout &l, const T *xr,
                                  const RowShape &s, float *scratch, float &max,
                                  float &sum) {
  const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
  float m = -INFINITY;
  forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    loadPack<N>(xr + i, v);
#pragma unroll
    for (int k = 0; k < N; ++k)
      m = fmaxf(m, v[k]);
  });
  m = rowReduce(l, m, scratch, MaxOp());
  float e = 0.0f;
  forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    loadPack<N>(xr + i, v);
#pragma unroll
    for (int k = 0; k < N; ++k)
      e += math::rowExp(v[k] - m);
  });
  max = m;
  sum = rowReduce(l, e, scratch, SumOp());
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmaxKernel(const T *x, T *y, RowShape s) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  for (int64_t r = l.first; r < s.rows; r += l.stride) {
    const T *xr = x + r * s.d;
    T *yr = y + r * s.d;
    const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
    float max, sum;
    softmaxStatistics(l, xr, s, scratch, max, sum);
    float inv = 1.0f / sum;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N];
      loadPack<N>(xr + i, v);
#pragma unroll
      for (int k = 0; k < N; ++k)
        v[k] = math::rowExp(v[k] - max) * inv;
      storePack<N>(yr + i, v);
    });
  }
}

/// dx = y (dy - sum(dy y)).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmaxGradKernel(const T *y, const T *dy, T *dx, RowShape s) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  for (int64_t r = l.first; r < s.rows; r += l.stride) {
    const T *yr = y + r * s.d, *dyr = dy + r * s.d;
    T *dxr = dx + r * s.d;
    const RowPacks packs = RowPacks::of(s.packed, yr, s.d);
    float dot = 0.0f;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float a[N], b[N];
      loadPack<N>(yr + i, a);
      loadPack<N>(dyr + i, b);
#pragma unroll
      for (int k = 0; k < N; ++k)
        dot += a[k] * b[k];
    });
    dot = rowReduce(l, dot, scratch, SumOp());
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float a[N], b[N];
      loadPack<N>(yr + i, a);
      loadPack<N>(dyr + i, b);
#pragma unroll
      for (int k = 0; k < N; ++k)
        a[k] = a[k] * (b[k] - dot);
      storePack<N>(dxr + i, a);
    });
  }
}

__device__ __forceinline__ int64_t labelAt(const void *labels, int type,
                                           int64_t t) {
  return static_cast<int64_t>(gd::loadElement(labels, type, t));
}

/// Per token: max + log(sum exp(x - max)) - x[label] in double, or NaN for an
/// ignored token (the portable marker: not counted by the mean).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    crossEntropyRowsKernel(const T *x, const void *labels, int labelType,
                           double *loss, RowShape s, bool hasIgnore,
                           int64_t ignoreIndex) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  for (int64_t t = l.first; t < s.rows; t += l.stride) {
    int64_t label = labelAt(labels, labelType, t);
    if (hasIgnore && label == ignoreIndex) { // the same for the whole row
      if (l.lane == 0)
        loss[t] = NAN;
      continue;
    }
    const T *xr = x + t * s.d;
    float max, sum;
    softmaxStatistics(l, xr, s, scratch, max, sum);
    if (l.lane == 0)
      loss[t] = math::crossEntropyLoss(max, sum, toFloat(xr[label]));
  }
}

constexpr int kSummaryThreads = 1024;

/// The mean of the counted (non-NaN) token losses, by one block: each thread
/// sums a fixed stride of tokens, then the block reduces in warp order.
__global__ void __launch_bounds__(kSummaryThreads)
    meanLossKernel(const double *loss, int64_t tokens, float *out) {
  __shared__ double scratch[kWarpSize];
  double total = 0.0, count = 0.0;
  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    if (loss[t] == loss[t]) {
      total += loss[t];
      count += 1.0;
    }
  total = blockReduce(total, scratch, SumOp());
  count = blockReduce(count, scratch, SumOp());
  if (threadIdx.x == 0)
    out[0] = count > 0.0 ? static_cast<float>(total / count) : 0.0f;
}

/// The number of tokens not ignored, by one block.
__global__ void __launch_bounds__(kSummaryThreads)
    countedTokensKernel(const void *labels, int labelType, int64_t tokens,
                        bool hasIgnore, int64_t ignoreIndex, int64_t *out) {
  __shared__ long long scratch[kWarpSize];
  long long count = 0;
  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    count += hasIgnore && labelAt(labels, labelType, t) == ignoreIndex ? 0 : 1;
  count = blockReduce(count, scratch, SumOp());
  if (threadIdx.x == 0)
    out[0] = count;
}

/// dx = factor (exp(x - max) / sum - [i == label]) with factor = dloss /
/// counted; zero rows for ignored tokens and when nothing is counted.
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    crossEntropyGradKernel(const T *x, const void *labels, int labelType,
                           const void *lossGrad, int lossGradType,
                           const int64_t *counted, T *dx, RowShape s,
                           bool hasIgnore, int64_t ignoreIndex) {
  __shared__ float scratch[kWarpsPerBlock];
  RowLayout l = RowLayout::of(s.warpPerRow);
  int64_t count = counted[0];
  for (int64_t t = l.first; t < s.rows; t += l.stride) {
    int64_t label = labelAt(labels, labelType, t);
    const T *xr = x + t * s.d;
    T *dxr = dx + t * s.d;
    const RowPacks packs = RowPacks::of(s.packed, xr, s.d);
    if (count == 0 || (hasIgnore && label == ignoreIndex)) {
      forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
        constexpr int N = decltype(n)::value;
        float zero[N] = {};
        storePack<N>(dxr + i, zero);
      });
      continue;
    }
    float factor =
        static_cast<float>(gd::loadElement(lossGrad, lossGradType, 0) /
                           static_cast<double>(count));
    float max, sum;
    softmaxStatistics(l, xr, s, scratch, max, sum);
    float scale = factor / sum;
    forEachPack(l, s.d, packs, [&](int64_t i, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N];
      loadPack<N>(xr + i, v);
#pragma unroll
      for (int k = 0; k < N; ++k)
        v[k] =
            math::rowExp(v[k] - max) * scale - (i + k == label ? factor : 0.0f);
      storePack<N>(dxr + i, v);
    });
  }
}

// --- host launchers, one storage type T each
// -----------------------------------

template <typename T>
void normT(const Tensor &input, const Tensor &scale, const Tensor &bias,
           Tensor &y, const RowShape &s, double epsilon, bool centred) {
  launchRows(s, normKernel<T>, static_cast<const T *>(input.raw()),
             weightOf(scale), weightOf(bias), static_cast<T *>(y.raw()), s,
             static_cast<float>(epsilon), centred);
}

Tensor norm(const Tensor &input, const Tensor &scale, const Tensor &bias,
            double epsilon, bool centred) {
  int64_t d = input.dim(input.rank() - 1);
  int64_t rows = d ? input.numel() / d : 0;
  Tensor y = gpu::empty(input.shape(), input.dtype());
  RowShape s = rowShapeOf(rows, d, {input.raw(), y.raw()});
  RTX_FAST_FLOAT_TYPE(input.dtype(), normT, input, scale, bias, y, s, epsilon,
                      centred);
  return y;
}

/// Rows per chunk of the column sums: at least 32, and at most 256 chunks
/// (bounding the partials at 2 KiB per column).
int64_t rowsPerChunkFor(int64_t rows) {
  const int64_t maxChunks = 256;
  int64_t perChunk = (rows + maxChunks - 1) / maxChunks;
  return perChunk < 32 ? 32 : perChunk;
}

template <typename T>
void normGradT(const Tensor &input, const Tensor &scale, const Tensor &dy,
               Tensor &dx, Tensor &dscale, Tensor &dbias, const RowShape &s,
               double epsilon, bool centred) {
  const T *px = static_cast<const T *>(input.raw());
  const T *pdy = static_cast<const T *>(dy.raw());
  // Each row's RowStats, as three f32.
  static_assert(sizeof(RowStats) == 3 * sizeof(float), "RowStats is packed");
  Tensor stats = gpu::empty({s.rows, 3}, DType::F32);
  RowStats *pstats = static_cast<RowStats *>(stats.raw());
  launchRows(s, normGradRowsKernel<T>, px, pdy, weightOf(scale),
             static_cast<T *>(dx.raw()), pstats, s, static_cast<float>(epsilon),
             centred);
  if (s.d == 0)
    return;
  int64_t perChunk = rowsPerChunkFor(s.rows);
  int64_t chunks = (s.rows + perChunk - 1) / perChunk;
  Tensor partialScale = gpu::empty({chunks, s.d}, DType::F32);
  Tensor partialBias =
      centred ? gpu::empty({chunks, s.d}, DType::F32) : Tensor();
  float *pps = static_cast<float *>(partialScale.raw());
  float *ppb = centred ? static_cast<float *>(partialBias.raw()) : nullptr;
  constexpr int threads = 256;
  unsigned columnBlocks = static_cast<unsigned>((s.d + threads - 1) / threads);
  if (chunks > 0) {
    normColumnPartialsKernel<T>
        <<<dim3(columnBlocks, static_cast<unsigned>(chunks)), threads, 0,
           gd::stream()>>>(px, pdy, pstats, pps, ppb, s.rows, s.d, perChunk);
    gd::check(cudaGetLastError(), "a fast column-sum launch");
  }
  normColumnTotalsKernel<<<columnBlocks, threads, 0, gd::stream()>>>(
      pps, ppb, dscale.raw(), dbias.defined() ? dbias.raw() : nullptr,
      static_cast<int>(dscale.dtype()), chunks, s.d);
  gd::check(cudaGetLastError(), "a fast column-sum launch");
}

template <typename T>
void softmaxT(const Tensor &x, Tensor &y, const RowShape &s) {
  launchRows(s, softmaxKernel<T>, static_cast<const T *>(x.raw()),
             static_cast<T *>(y.raw()), s);
}

template <typename T>
void softmaxGradT(const Tensor &y, const Tensor &dy, Tensor &dx,
                  const RowShape &s) {
  launchRows(s, softmaxGradKernel<T>, static_cast<const T *>(y.raw()),
             static_cast<const T *>(dy.raw()), static_cast<T *>(dx.raw()), s);
}

template <typename T>
void crossEntropyRowsT(const Tensor &logits, const Tensor &labels, Tensor &loss,
                       const RowShape &s, bool hasIgnore, int64_t ignoreIndex) {
  launchRows(s, crossEntropyRowsKernel<T>, static_cast<const T *>(logits.raw()),
             labels.raw(), static_cast<int>(labels.dtype()),
             static_cast<double *>(loss.raw()), s, hasIgnore, ignoreIndex);
}

template <typename T>
void crossEntropyGradT(const Tensor &logits, const Tensor &labels,
                       const Tensor &lossGrad, const Tensor &counted,
                       Tensor &dx, const RowShape &s, bool hasIgnore,
                       int64_t ignoreIndex) {
  launchRows(s, crossEntropyGradKernel<T>, static_cast<const T *>(logits.raw()),
             labels.raw(), static_cast<int>(labels.dtype()), lossGrad.raw(),
             static_cast<int>(lossGrad.dtype()),
             static_cast<const int64_t *>(counted.raw()),
             static_cast<T *>(dx.raw()), s, hasIgnore, ignoreIndex);
}

} // namespace

Tensor gpu::fast::layerNorm(const Tensor &input, const Tensor &scale,
                            const Tensor &bias, double epsilon) {
  return norm(input, scale, bias, epsilon, true);
}

Tensor gpu::fast::rmsNorm(const Tensor &input, const Tensor &scale,
                          double epsilon) {
  return norm(input, scale, Tensor(), epsilon, false);
}

std::vector<Tensor> gpu::fast::normGrad(const Tensor &input,
                                        const Tensor &scale,
                                        const Tensor &resultGrad,
                                        double epsilon, bool layerNorm) {
  int64_t d = input.dim(input.rank() - 1);
  int64_t rows = d ? input.numel() / d : 0;
  Tensor dx = gpu::empty(input.shape(), input.dtype());
  Tensor dscale = gpu::empty({d}, scale.dtype());
  Tensor dbias = layerNorm ? gpu::empty({d}, scale.dtype()) : Tensor();
  RowShape s = rowShapeOf(rows, d, {input.raw(), resultGrad.raw(), dx.raw()});
  RTX_FAST_FLOAT_TYPE(input.dtype(), normGradT, input, scale, resultGrad, dx,
                      dscale, dbias, s, epsilon, layerNorm);
  std::vector<Tensor> results = {dx, dscale};
  if (layerNorm)
    results.push_back(dbias);
  return results;
}

Tensor gpu::fast::softmaxLastDim(const Tensor &input) {
  int64_t d = input.dim(input.rank() - 1);
  int64_t rows = d ? input.numel() / d : 0;
  Tensor y = gpu::empty(input.shape(), input.dtype());
  RowShape s = rowShapeOf(rows, d, {input.raw(), y.raw()});
  RTX_FAST_FLOAT_TYPE(input.dtype(), softmaxT, input, y, s);
  return y;
}

Tensor gpu::fast::softmaxGradLastDim(const Tensor &result,
                                     const Tensor &resultGrad) {
  int64_t d = result.dim(result.rank() - 1);
  int64_t rows = d ? result.numel() / d : 0;
  Tensor dx = gpu::empty(result.shape(), result.dtype());
  RowShape s = rowShapeOf(rows, d, {result.raw(), resultGrad.raw(), dx.raw()});
  RTX_FAST_FLOAT_TYPE(result.dtype(), softmaxGradT, result, resultGrad, dx, s);
  return dx;
}

Tensor gpu::fast::crossEntropy(const Tensor &logits, const Tensor &labels,
                               bool hasIgnoreIndex, int64_t ignoreIndex) {
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
  Tensor loss = gpu::empty({tokens}, DType::F64);
  RowShape s = rowShapeOf(tokens, vocab, {logits.raw()});
  RTX_FAST_FLOAT_TYPE(logits.dtype(), crossEntropyRowsT, logits, labels, loss,
                      s, hasIgnoreIndex, ignoreIndex);
  Tensor mean = gpu::empty({}, DType::F32);
  meanLossKernel<<<1, kSummaryThreads, 0, gd::stream()>>>(
      static_cast<const double *>(loss.raw()), tokens,
      static_cast<float *>(mean.raw()));
  gd::check(cudaGetLastError(), "a fast loss-mean launch");
  return mean;
}

Tensor gpu::fast::crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                                   const Tensor &lossGrad, bool hasIgnoreIndex,
                                   int64_t ignoreIndex) {
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
  Tensor counted = gpu::empty({}, DType::I64);
  countedTokensKernel<<<1, kSummaryThreads, 0, gd::stream()>>>(
      labels.raw(), static_cast<int>(labels.dtype()), tokens, hasIgnoreIndex,
      ignoreIndex, static_cast<int64_t *>(counted.raw()));
  gd::check(cudaGetLastError(), "a fast token-count launch");
  Tensor dx = gpu::empty(logits.shape(), logits.dtype());
  RowShape s = rowShapeOf(tokens, vocab, {logits.raw(), dx.raw()});
  RTX_FAST_FLOAT_TYPE(logits.dtype(), crossEntropyGradT, logits, labels,
                      lossGrad, counted, dx, s, hasIgnoreIndex, ignoreIndex);
  return dx;
}
