//===- VectorMathTest.cpp - expApprox, tanhApprox, laneSum, laneMax -------===//
//
// The vectorisable helpers of the CPU and GPU kernels (runtime/lib/common/
// ElementMath.h) against libm in double and against sums in a known order.

#include "../common/ElementMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace rtxrt::math;

namespace {

/// |approx - exact| in units of the f32 spacing at `exact`.
double ulpError(float approx, double exact) {
  float rounded = static_cast<float>(exact);
  double ulp = std::nextafter(std::fabs(rounded),
                              std::numeric_limits<float>::infinity()) -
               std::fabs(rounded);
  return std::fabs(static_cast<double>(approx) - exact) / ulp;
}

TEST(VectorMath, ExpWithinTwoUlpOverItsRange) {
  double worst = 0.0;
  float worstAt = 0.0f;
  for (float x = -87.0f; x <= 88.3f; x += 0.000731f) {
    double err = ulpError(expApprox(x), std::exp(static_cast<double>(x)));
    if (err > worst) {
      worst = err;
      worstAt = x;
    }
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worstAt;
}

TEST(VectorMath, ExpSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(expApprox(0.0f), 1.0f);
  EXPECT_EQ(expApprox(-inf), 0.0f); // a masked score contributes nothing
  EXPECT_EQ(expApprox(-100.0f), 0.0f);
  EXPECT_EQ(expApprox(inf), inf);
  EXPECT_EQ(expApprox(89.0f), inf);
  EXPECT_TRUE(std::isnan(expApprox(std::nanf(""))));
  EXPECT_EQ(expApprox(1.0), std::exp(1.0)); // double is libm's
}

TEST(VectorMath, TanhWithinTwoUlpAndNaNStaysNaN) {
  double worst = 0.0;
  for (float x = -12.0f; x <= 12.0f; x += 0.000377f) {
    double exact = std::tanh(static_cast<double>(x));
    if (std::fabs(exact) < 1e-30)
      continue;
    worst = std::max(worst, ulpError(tanhApprox(x), exact));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(tanhApprox(0.0f), 0.0f);
  EXPECT_EQ(tanhApprox(30.0f), 1.0f);
  EXPECT_EQ(tanhApprox(-30.0f), -1.0f);
  EXPECT_TRUE(std::isnan(tanhApprox(std::nanf(""))));
}

TEST(VectorMath, LaneSumIsTheFixedOrderSum) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t n : {0, 1, 7, 8, 9, 63, 64, 1000}) {
    std::vector<float> x(n);
    for (float &v : x)
      v = dist(gen);
    // The documented order: lane l holds elements l, l + 8, ... of the
    // whole groups of 8; the lanes are added pairwise, then the tail.
    double lane[kLanes] = {};
    int64_t whole = n / kLanes * kLanes;
    for (int64_t i = 0; i < whole; ++i)
      lane[i % kLanes] += x[i];
    double tail = 0.0;
    for (int64_t i = whole; i < n; ++i)
      tail += x[i];
    double expected = (((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                       ((lane[4] + lane[5]) + (lane[6] + lane[7]))) +
                      tail;
    double got = laneSum(n, [&](int64_t i) { return double(x[i]); });
    EXPECT_EQ(got, expected) << "n = " << n;
    long double exact = 0;
    for (float v : x)
      exact += v;
    EXPECT_NEAR(got, static_cast<double>(exact), 1e-12) << "n = " << n;
  }
}

TEST(VectorMath, LaneMaxSkipsNaNsLikeFmax) {
  EXPECT_EQ(laneMax<float>(nullptr, 0),
            -std::numeric_limits<float>::infinity());
  std::vector<float> x(37);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(static_cast<float>(i));
  x[20] = 5.0f;
  x[3] = std::nanf("");
  EXPECT_EQ(laneMax(x.data(), static_cast<int64_t>(x.size())), 5.0f);
  x[36] = 6.0f; // in the tail
  EXPECT_EQ(laneMax(x.data(), static_cast<int64_t>(x.size())), 6.0f);
}

} // namespace
