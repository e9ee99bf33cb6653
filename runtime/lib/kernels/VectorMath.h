//===- VectorMath.h - math the CPU kernels' loops can vectorise -*- C++ -*-===//
//
// Private to librtxrt. libm's expf/tanhf are opaque calls, and a running sum
// `s += x[i]` is a chain of dependent additions that the compiler may not
// reorder (that would change the rounding): loops written with either stay
// scalar. These helpers are written so that the loops around them vectorise,
// with results that depend on the data only (never on the thread count, the
// vector width or where a chunk starts):
//   - expApprox / tanhApprox: Cephes' f32 algorithms, computed with the same
//     operations in a vector body and a scalar tail;
//   - laneSum / laneMax: kLanes interleaved partial results combined in one
//     fixed order.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_KERNELS_VECTORMATH_H
#define RTXRT_LIB_KERNELS_VECTORMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace rtxrt {
namespace detail {

/// exp for f32: Cephes' expf (range reduction by ln 2 in two parts, degree-6
/// polynomial, scaling by 2^n built in the exponent bits); within 2 ulp of
/// exp on [-87.3, 88.37]. Below that it returns 0 (exp's results there are
/// subnormal, < 1.2e-38), above it +inf; exp(-inf) = 0 and NaN stays NaN.
inline float expApprox(float x) {
  constexpr float kMax = 88.3762626647949f;  // log(FLT_MAX)
  constexpr float kMin = -87.3365447504019f; // log(FLT_MIN)
  float c = std::fmin(std::fmax(x, kMin), kMax);
  float n = std::floor(c * 1.44269504088896341f + 0.5f);
  float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  float er = p * r * r + r + 1.0f;
  // n is in [-126, 127] here (fmin/fmax return the bound for a NaN x).
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float y = er * scale;
  if (x < kMin)
    y = 0.0f;
  if (x > kMax)
    y = std::numeric_limits<float>::infinity();
  if (x != x)
    y = x;
  return y;
}
inline double expApprox(double x) { return std::exp(x); }

/// tanh for f32 (libm's tanhf was a fifth of a GPT-2 training step in
/// GELU's tanh approximation and its gradient). Cephes' tanhf: an odd
/// polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above; about 2 ulp.
/// Both paths are computed and one is selected. NaN stays NaN.
inline float tanhApprox(float x) {
  float a = std::fabs(x);
  // exp(2a), clamped where tanh is +-1 in f32 anyway.
  float large = 1.0f - 2.0f / (expApprox(std::fmin(2.0f * a, 88.0f)) + 1.0f);
  float z = x * x;
  float q = -5.70498872745E-3f;
  q = q * z + 2.06390887954E-2f;
  q = q * z - 5.37397155531E-2f;
  q = q * z + 1.33314422036E-1f;
  q = q * z - 3.33332819422E-1f;
  float small = q * z * x + x;
  float signedLarge = x < 0.0f ? -large : large;
  float y = a < 0.625f ? small : signedLarge;
  return x != x ? x : y; // NaN stays NaN
}
inline double tanhApprox(double x) { return std::tanh(x); }

/// Partial results per reduction: 8 doubles fill one AVX-512 register or
/// two AVX2 ones.
constexpr int kLanes = 8;

/// The sum of term(0) + ... + term(n - 1) in double, term(i) going to lane
/// i % kLanes and the lanes added pairwise in a fixed order.
template <typename Term> inline double laneSum(int64_t n, Term term) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += term(i + l);
  double tail = 0.0;
  for (; i < n; ++i)
    tail += term(i);
  return (((lane[0] + lane[1]) + (lane[2] + lane[3])) +
          ((lane[4] + lane[5]) + (lane[6] + lane[7]))) +
         tail;
}

/// The largest of x[0..n) by fmax (NaNs are skipped, as std::fmax does);
/// -inf for n = 0. max is exact, so the lanes change nothing but speed.
template <typename T> inline T laneMax(const T *x, int64_t n) {
  T lane[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lane[l] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] = std::fmax(lane[l], x[i + l]);
  T max = -std::numeric_limits<T>::infinity();
  for (; i < n; ++i)
    max = std::fmax(max, x[i]);
  for (int l = 0; l < kLanes; ++l)
    max = std::fmax(max, lane[l]);
  return max;
}

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_KERNELS_VECTORMATH_H
