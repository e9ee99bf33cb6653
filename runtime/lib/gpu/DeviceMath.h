//===- DeviceMath.h - per-element math for the GPU kernels ------*- C++ -*-===//
//
// Private to the GPU runtime: the element functions of the elementwise ops
// and their derivatives, the same formulas as the CPU kernels
// (runtime/lib/kernels/Elementwise.cpp, Gradients.cpp), callable from
// device code and from the host emulation; and loads/stores of any dtype.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_DEVICEMATH_H
#define RTXRT_LIB_GPU_DEVICEMATH_H

#include "Portable.h"

#include <math.h>

namespace rtxrt {
namespace gpu {
namespace detail {

// C's names, overloaded for float and double, callable on both sides.
RTX_GPU_FN inline float mexp(float v) { return expf(v); }
RTX_GPU_FN inline double mexp(double v) { return exp(v); }
RTX_GPU_FN inline float mlog(float v) { return logf(v); }
RTX_GPU_FN inline double mlog(double v) { return log(v); }
RTX_GPU_FN inline float msqrt(float v) { return sqrtf(v); }
RTX_GPU_FN inline double msqrt(double v) { return sqrt(v); }
RTX_GPU_FN inline float mtanh(float v) { return tanhf(v); }
RTX_GPU_FN inline double mtanh(double v) { return tanh(v); }
RTX_GPU_FN inline float merf(float v) { return erff(v); }
RTX_GPU_FN inline double merf(double v) { return erf(v); }
RTX_GPU_FN inline float mfmax(float a, float b) { return fmaxf(a, b); }
RTX_GPU_FN inline double mfmax(double a, double b) { return fmax(a, b); }

template <typename T> RTX_GPU_FN T unaryValue(UnaryKind kind, T v) {
  const T one = T(1), half = T(0.5);
  const T invSqrt2 = T(0.70710678118654752440084436210485);
  const T sqrt2OverPi = T(0.79788456080286535587989211986876);
  const T cubic = T(0.044715);
  switch (kind) {
  case UnaryKind::Neg:
    return -v;
  case UnaryKind::Exp:
    return mexp(v);
  case UnaryKind::Log:
    return mlog(v);
  case UnaryKind::Sqrt:
    return msqrt(v);
  case UnaryKind::Rsqrt:
    return one / msqrt(v);
  case UnaryKind::Tanh:
    return mtanh(v);
  case UnaryKind::Sigmoid:
    return one / (one + mexp(-v));
  case UnaryKind::Relu:
    return v > T(0) || v != v ? v : T(0);
  case UnaryKind::Silu:
    return v / (one + mexp(-v));
  case UnaryKind::Gelu:
    return half * v * (one + merf(v * invSqrt2));
  case UnaryKind::GeluTanh:
    return half * v * (one + mtanh(sqrt2OverPi * (v + cubic * v * v * v)));
  }
  return v;
}

/// max/min that propagate NaN like torch.maximum/minimum.
template <typename T> RTX_GPU_FN T binaryValue(BinaryKind kind, T u, T v) {
  switch (kind) {
  case BinaryKind::Add:
    return u + v;
  case BinaryKind::Sub:
    return u - v;
  case BinaryKind::Mul:
    return u * v;
  case BinaryKind::Div:
    return u / v;
  case BinaryKind::Maximum:
    return (u > v || u != u) ? u : v;
  case BinaryKind::Minimum:
    return (u < v || u != u) ? u : v;
  }
  return u;
}

/// g * f'(v) for rtx.unary_grad, written as the CPU kernels write it.
template <typename T> RTX_GPU_FN T unaryGradValue(UnaryFn fn, T v, T g) {
  const T one = T(1), half = T(0.5);
  const T invSqrt2 = T(0.70710678118654752440084436210485);
  const T invSqrt2Pi = T(0.39894228040143267793994605993438);
  const T sqrt2OverPi = T(0.79788456080286535587989211986876);
  const T cubic = T(0.044715);
  switch (fn) {
  case UnaryFn::Exp:
    return g * mexp(v);
  case UnaryFn::Log:
    return g / v;
  case UnaryFn::Sqrt:
    return g * half / msqrt(v);
  case UnaryFn::Rsqrt: {
    T r = one / msqrt(v);
    return g * (-half) * r * r * r;
  }
  case UnaryFn::Tanh: {
    T t = mtanh(v);
    return g * (one - t * t);
  }
  case UnaryFn::Sigmoid: {
    T s = one / (one + mexp(-v));
    return g * s * (one - s);
  }
  case UnaryFn::Relu:
    return v > T(0) ? g : (v != v ? v : T(0));
  case UnaryFn::Silu: {
    T s = one / (one + mexp(-v));
    return g * s * (one + v * (one - s));
  }
  case UnaryFn::Gelu: {
    T cdf = half * (one + merf(v * invSqrt2));
    T pdf = invSqrt2Pi * mexp(-half * v * v);
    return g * (cdf + v * pdf);
  }
  case UnaryFn::GeluTanh: {
    T u = sqrt2OverPi * (v + cubic * v * v * v);
    T t = mtanh(u);
    T du = sqrt2OverPi * (one + T(3) * cubic * v * v);
    return g * (half * (one + t) + half * v * (one - t * t) * du);
  }
  }
  return g;
}

/// Float to integer: truncation toward zero, saturating; NaN gives 0 (as
/// Tensor::setFromDouble).
template <typename I>
RTX_GPU_FN I saturate(double value, double lo, double hiExclusive, I min,
                      I max) {
  if (value != value)
    return 0;
  if (value <= lo)
    return min;
  if (value >= hiExclusive)
    return max;
  return static_cast<I>(value);
}

/// Element i of a buffer of dtype `dtype` (a DType as int) as double.
RTX_GPU_FN inline double loadElement(const void *p, int dtype, int64_t i) {
  switch (static_cast<DType>(dtype)) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::F64:
    return static_cast<const double *>(p)[i];
#if defined(__CUDACC__)
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case DType::F16:
    return __half2float(static_cast<const __half *>(p)[i]);
#else
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
#endif
  case DType::I1:
    return static_cast<const uint8_t *>(p)[i] ? 1.0 : 0.0;
  case DType::I32:
    return static_cast<const int32_t *>(p)[i];
  case DType::I64:
    return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  }
  return 0.0;
}

/// Stores `value` into element i (rounded to nearest even for bf16/f16).
RTX_GPU_FN inline void storeElement(void *p, int dtype, int64_t i,
                                    double value) {
  switch (static_cast<DType>(dtype)) {
  case DType::F32:
    static_cast<float *>(p)[i] = static_cast<float>(value);
    break;
  case DType::F64:
    static_cast<double *>(p)[i] = value;
    break;
#if defined(__CUDACC__)
  case DType::BF16:
    static_cast<__nv_bfloat16 *>(p)[i] =
        __float2bfloat16_rn(static_cast<float>(value));
    break;
  case DType::F16:
    static_cast<__half *>(p)[i] = __float2half_rn(static_cast<float>(value));
    break;
#else
  case DType::BF16:
    static_cast<uint16_t *>(p)[i] = floatToBF16(static_cast<float>(value));
    break;
  case DType::F16:
    static_cast<uint16_t *>(p)[i] = floatToF16(static_cast<float>(value));
    break;
#endif
  case DType::I1:
    static_cast<uint8_t *>(p)[i] = value != 0.0 ? 1 : 0;
    break;
  case DType::I32:
    static_cast<int32_t *>(p)[i] = saturate<int32_t>(
        value, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX);
    break;
  case DType::I64:
    static_cast<int64_t *>(p)[i] =
        saturate<int64_t>(value, -9223372036854775808.0, 9223372036854775808.0,
                          INT64_MIN, INT64_MAX);
    break;
  }
}

} // namespace detail
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_DEVICEMATH_H
