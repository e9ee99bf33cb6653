//===- GradCheck.h - finite-difference checks of backward kernels -*- C++
//-*-===//
//
// A backward kernel is a vector-Jacobian product: with resultGrad = r it must
// return the gradient of loss(x) = sum(forward(x) * r). The tests compute
// that gradient numerically from the *forward* kernel, in f64, by central
// differences, so a backward kernel is never checked against itself or
// against a formula copied from it.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_TEST_UNIT_RUNTIME_GRADCHECK_H
#define RTXRT_TEST_UNIT_RUNTIME_GRADCHECK_H

#include "TestUtil.h"

namespace rtxrt {
namespace test {

/// The central-difference step: with f64 kernels the truncation error
/// (~h^2) and the rounding error (~1e-16 / h) are both around 1e-10.
constexpr double kFiniteDifferenceStep = 1e-6;

/// sum(y * r) in double.
inline double dotWith(const Tensor &y, const Tensor &r) {
  EXPECT_EQ(shapeToString(y.shape()), shapeToString(r.shape()));
  double sum = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i)
    sum += y.getAsDouble(i) * r.getAsDouble(i);
  return sum;
}

/// d/dx[i] of sum(forward(x) * r) for every element of the f64 tensor x, by
/// central differences: forward is called on a copy of x with one element
/// moved by +-h.
template <typename F>
std::vector<double> numericGrad(F &&forward, const Tensor &x, const Tensor &r,
                                double h = kFiniteDifferenceStep) {
  EXPECT_EQ(x.dtype(), DType::F64) << "finite differences need f64 inputs";
  Tensor xp = x.clone();
  std::vector<double> grad(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = xp.getAsDouble(i);
    xp.setFromDouble(i, v + h);
    double plus = dotWith(forward(xp), r);
    xp.setFromDouble(i, v - h);
    double minus = dotWith(forward(xp), r);
    xp.setFromDouble(i, v);
    grad[i] = (plus - minus) / (2 * h);
  }
  return grad;
}

/// The directional derivative of sum(forward(x) * r) along u, by central
/// differences: a cheap check for shapes too large for numericGrad.
template <typename F>
double numericDirectional(F &&forward, const Tensor &x, const Tensor &u,
                          const Tensor &r, double h = kFiniteDifferenceStep) {
  Tensor plus = x.clone(), minus = x.clone();
  for (int64_t i = 0; i < x.numel(); ++i) {
    plus.setFromDouble(i, x.getAsDouble(i) + h * u.getAsDouble(i));
    minus.setFromDouble(i, x.getAsDouble(i) - h * u.getAsDouble(i));
  }
  return (dotWith(forward(plus), r) - dotWith(forward(minus), r)) / (2 * h);
}

/// The tolerance of a backward kernel against finite differences in f64.
constexpr double kGradTolerance = 1e-7;
/// An f32 backward kernel against the same kernel in f64 on the same
/// (f32-representable) inputs.
constexpr double kF32GradTolerance = 1e-5;

/// Expects the f32 result to match the f64 one within kF32GradTolerance.
inline void expectF32MatchesF64(const Tensor &f32, const Tensor &f64) {
  EXPECT_EQ(f32.dtype(), DType::F32);
  expectClose(f32, f64.shape(), toDoubles(f64), kF32GradTolerance);
}

} // namespace test
} // namespace rtxrt

#endif // RTXRT_TEST_UNIT_RUNTIME_GRADCHECK_H
