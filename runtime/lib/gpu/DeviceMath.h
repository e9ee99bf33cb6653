//===- DeviceMath.h - loads and stores for the GPU kernels ------*- C++ -*-===//
//
// Private to the GPU runtime: loads and stores of any dtype, callable from
// device code and from the host emulation. The element functions, their
// derivatives and the row math are runtime/lib/common/ElementMath.h's,
// shared with the CPU kernels.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_DEVICEMATH_H
#define RTXRT_LIB_GPU_DEVICEMATH_H

#include "Portable.h"

#include "../common/ElementMath.h"

#include <math.h>

namespace rtxrt {
namespace gpu {
namespace detail {

// The element functions of the elementwise ops and their derivatives are
// the CPU kernels' own (runtime/lib/common/ElementMath.h): one definition,
// compiled for both sides.
using math::binaryValue;
using math::unaryGradValue;
using math::unaryValue;

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

/// A float dtype's storage read as its compute type (f32 for f32, bf16 and
/// f16; f64 for f64) and written back rounded to nearest even: the portable
/// bodies read bf16/f16 where it lies instead of converting a whole tensor
/// to an f32 copy first. The values are exactly those of the copy (the
/// widening is exact, the rounding the same as rtx.convert's), so the
/// results are unchanged, with a third of the memory traffic.
template <DType D> struct FloatStorage;
template <> struct FloatStorage<DType::F32> {
  using Compute = float;
  RTX_GPU_FN static float load(const void *p, int64_t i) {
    return static_cast<const float *>(p)[i];
  }
  RTX_GPU_FN static void store(void *p, int64_t i, float v) {
    static_cast<float *>(p)[i] = v;
  }
};
template <> struct FloatStorage<DType::F64> {
  using Compute = double;
  RTX_GPU_FN static double load(const void *p, int64_t i) {
    return static_cast<const double *>(p)[i];
  }
  RTX_GPU_FN static void store(void *p, int64_t i, double v) {
    static_cast<double *>(p)[i] = v;
  }
};
template <> struct FloatStorage<DType::BF16> {
  using Compute = float;
#if defined(__CUDACC__)
  RTX_GPU_FN static float load(const void *p, int64_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  }
  RTX_GPU_FN static void store(void *p, int64_t i, float v) {
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
  }
#else
  static float load(const void *p, int64_t i) {
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  static void store(void *p, int64_t i, float v) {
    static_cast<uint16_t *>(p)[i] = floatToBF16(v);
  }
#endif
};
template <> struct FloatStorage<DType::F16> {
  using Compute = float;
#if defined(__CUDACC__)
  RTX_GPU_FN static float load(const void *p, int64_t i) {
    return __half2float(static_cast<const __half *>(p)[i]);
  }
  RTX_GPU_FN static void store(void *p, int64_t i, float v) {
    static_cast<__half *>(p)[i] = __float2half_rn(v);
  }
#else
  static float load(const void *p, int64_t i) {
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  static void store(void *p, int64_t i, float v) {
    static_cast<uint16_t *>(p)[i] = floatToF16(v);
  }
#endif
};

} // namespace detail
} // namespace gpu
} // namespace rtxrt

/// Calls fn<D>(...) with D the float dtype `dtype` (f32, f64, bf16, f16) as
/// a template argument, for bodies over FloatStorage<D>.
#define RTX_GPU_FLOAT_STORAGE(dtype, fn, ...)                                  \
  ((dtype) == ::rtxrt::DType::F64    ? fn<::rtxrt::DType::F64>(__VA_ARGS__)    \
   : (dtype) == ::rtxrt::DType::BF16 ? fn<::rtxrt::DType::BF16>(__VA_ARGS__)   \
   : (dtype) == ::rtxrt::DType::F16  ? fn<::rtxrt::DType::F16>(__VA_ARGS__)    \
                                     : fn<::rtxrt::DType::F32>(__VA_ARGS__))

#endif // RTXRT_LIB_GPU_DEVICEMATH_H
