//===- ElementwiseFast.cu - elementwise kernels in packs of 8 -------------===//
//
// The fast elementwise kernels (CUDA only; the portable references are
// Elementwise.cu's): rtx.unary, rtx.binary (float operands), rtx.unary_grad,
// rtx.swiglu and rtx.convert between f32, bf16 and f16. Each thread moves
// packs of 8 elements (128-bit loads and stores) in a grid-stride loop while
// every operand is 16-byte aligned, and the tail (fewer than 8 elements, or
// everything when an operand is not aligned) one element at a time. Values
// are widened to f32 in registers and the formulas are ElementMath.h's, the
// same as the CPU's and the portable bodies'; results are rounded to the
// storage dtype once.
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

constexpr int kThreads = 256;

bool allPackAligned(std::initializer_list<const void *> operands) {
  for (const void *p : operands)
    if (!isPackAligned(p))
      return false;
  return true;
}

/// Launches a flat kernel over n elements (nothing when n is 0).
template <typename... Params, typename... Args>
void launchFlat(int64_t n, void (*kernel)(Params...), Args... args) {
  if (n == 0)
    return;
  kernel<<<flatGridFor(n, kThreads), kThreads, 0, gd::stream()>>>(args...);
  gd::check(cudaGetLastError(), "a fast elementwise kernel launch");
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    unaryKernel(UnaryKind kind, const T *x, T *y, int64_t n, bool packed) {
  forEachFlat(n, packed, [&](int64_t i, auto count) {
    constexpr int N = decltype(count)::value;
    float v[N];
    loadPack<N>(x + i, v);
#pragma unroll
    for (int k = 0; k < N; ++k)
      v[k] = math::unaryValue<float>(kind, v[k]);
    storePack<N>(y + i, v);
  });
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    binaryKernel(BinaryKind kind, const T *a, const T *b, T *y, int64_t n,
                 bool packed) {
  forEachFlat(n, packed, [&](int64_t i, auto count) {
    constexpr int N = decltype(count)::value;
    float u[N], v[N];
    loadPack<N>(a + i, u);
    loadPack<N>(b + i, v);
#pragma unroll
    for (int k = 0; k < N; ++k)
      u[k] = math::binaryValue<float>(kind, u[k], v[k]);
    storePack<N>(y + i, u);
  });
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    unaryGradKernel(UnaryFn fn, const T *x, const T *dy, T *dx, int64_t n,
                    bool packed) {
  forEachFlat(n, packed, [&](int64_t i, auto count) {
    constexpr int N = decltype(count)::value;
    float v[N], g[N];
    loadPack<N>(x + i, v);
    loadPack<N>(dy + i, g);
#pragma unroll
    for (int k = 0; k < N; ++k)
      v[k] = math::unaryGradValue<float>(fn, v[k], g[k]);
    storePack<N>(dx + i, v);
  });
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    swigluKernel(const T *gate, const T *up, T *y, int64_t n, bool packed) {
  forEachFlat(n, packed, [&](int64_t i, auto count) {
    constexpr int N = decltype(count)::value;
    float g[N], u[N];
    loadPack<N>(gate + i, g);
    loadPack<N>(up + i, u);
#pragma unroll
    for (int k = 0; k < N; ++k)
      g[k] = math::SwiGLU::value(g[k], u[k]);
    storePack<N>(y + i, g);
  });
}

template <typename From, typename To>
__global__ void __launch_bounds__(kThreads)
    convertKernel(const From *x, To *y, int64_t n, bool packed) {
  forEachFlat(n, packed, [&](int64_t i, auto count) {
    constexpr int N = decltype(count)::value;
    float v[N];
    loadPack<N>(x + i, v);
    storePack<N>(y + i, v);
  });
}

template <typename T> void unaryT(UnaryKind kind, const Tensor &x, Tensor &y) {
  launchFlat(x.numel(), unaryKernel<T>, kind, static_cast<const T *>(x.raw()),
             static_cast<T *>(y.raw()), x.numel(),
             allPackAligned({x.raw(), y.raw()}));
}

template <typename T>
void binaryT(BinaryKind kind, const Tensor &a, const Tensor &b, Tensor &y) {
  launchFlat(a.numel(), binaryKernel<T>, kind, static_cast<const T *>(a.raw()),
             static_cast<const T *>(b.raw()), static_cast<T *>(y.raw()),
             a.numel(), allPackAligned({a.raw(), b.raw(), y.raw()}));
}

template <typename T>
void unaryGradT(UnaryFn fn, const Tensor &x, const Tensor &dy, Tensor &dx) {
  launchFlat(x.numel(), unaryGradKernel<T>, fn, static_cast<const T *>(x.raw()),
             static_cast<const T *>(dy.raw()), static_cast<T *>(dx.raw()),
             x.numel(), allPackAligned({x.raw(), dy.raw(), dx.raw()}));
}

template <typename T>
void swigluT(const Tensor &gate, const Tensor &up, Tensor &y) {
  launchFlat(gate.numel(), swigluKernel<T>, static_cast<const T *>(gate.raw()),
             static_cast<const T *>(up.raw()), static_cast<T *>(y.raw()),
             gate.numel(), allPackAligned({gate.raw(), up.raw(), y.raw()}));
}

template <typename To, typename From>
void convertInto(const Tensor &x, Tensor &y) {
  launchFlat(x.numel(), convertKernel<From, To>,
             static_cast<const From *>(x.raw()), static_cast<To *>(y.raw()),
             x.numel(), allPackAligned({x.raw(), y.raw()}));
}

template <typename From> void convertFrom(const Tensor &x, Tensor &y) {
  switch (y.dtype()) {
  case DType::BF16:
    convertInto<__nv_bfloat16, From>(x, y);
    break;
  case DType::F16:
    convertInto<__half, From>(x, y);
    break;
  default:
    convertInto<float, From>(x, y);
    break;
  }
}

} // namespace

Tensor gpu::fast::unary(UnaryKind kind, const Tensor &input) {
  Tensor y = gpu::empty(input.shape(), input.dtype());
  RTX_FAST_FLOAT_TYPE(input.dtype(), unaryT, kind, input, y);
  return y;
}

Tensor gpu::fast::binary(BinaryKind kind, const Tensor &lhs,
                         const Tensor &rhs) {
  Tensor y = gpu::empty(lhs.shape(), lhs.dtype());
  RTX_FAST_FLOAT_TYPE(lhs.dtype(), binaryT, kind, lhs, rhs, y);
  return y;
}

Tensor gpu::fast::unaryGrad(UnaryFn fn, const Tensor &input,
                            const Tensor &resultGrad) {
  Tensor dx = gpu::empty(input.shape(), input.dtype());
  RTX_FAST_FLOAT_TYPE(input.dtype(), unaryGradT, fn, input, resultGrad, dx);
  return dx;
}

Tensor gpu::fast::swiglu(const Tensor &gate, const Tensor &up) {
  Tensor y = gpu::empty(gate.shape(), gate.dtype());
  RTX_FAST_FLOAT_TYPE(gate.dtype(), swigluT, gate, up, y);
  return y;
}

Tensor gpu::fast::convert(const Tensor &input, DType to) {
  Tensor y = gpu::empty(input.shape(), to);
  RTX_FAST_FLOAT_TYPE(input.dtype(), convertFrom, input, y);
  return y;
}
