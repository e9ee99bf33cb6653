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

} // namespace detail
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_DEVICEMATH_H
