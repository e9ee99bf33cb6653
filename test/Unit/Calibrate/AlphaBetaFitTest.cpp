//===- AlphaBetaFitTest.cpp - rtx-calibrate's alpha-beta fit --------------===//
//
// The fit must recover a known line, keep the latency of small messages
// although large ones dominate the seconds, and never hand the cost model a
// negative alpha or a non-positive beta.
//
//===----------------------------------------------------------------------===//

#include "AlphaBetaFit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace rtx::calibrate;

namespace {
constexpr double kKiB = 1024, kMiB = 1024 * 1024;

/// Sizes 4 KiB .. 64 MiB by factors of 4, as rtx-calibrate times them.
std::vector<Sample> line(double alpha, double beta,
                         const std::vector<double> &relativeNoise = {}) {
  std::vector<Sample> samples;
  size_t i = 0;
  for (double n = 4 * kKiB; n <= 64 * kMiB; n *= 4, ++i) {
    double t = alpha + n / beta;
    if (i < relativeNoise.size())
      t *= 1 + relativeNoise[i];
    samples.push_back({n, t});
  }
  return samples;
}
} // namespace

TEST(AlphaBetaFit, RecoversAnExactLine) {
  AlphaBeta fit = fitAlphaBeta(line(30e-6, 2e9));
  EXPECT_EQ(fit.method, "least_squares");
  EXPECT_TRUE(fit.warning.empty());
  EXPECT_NEAR(fit.alphaS, 30e-6, 1e-9);
  EXPECT_NEAR(fit.betaBytesPerS / 2e9, 1, 1e-6);
}

// Plain least squares on seconds would let 2% noise on the 64 MiB message
// (0.7 ms, against an alpha of 30 us) swing alpha by more than itself; the
// relative weighting keeps it from the small messages.
TEST(AlphaBetaFit, KeepsTheLatencyUnderNoiseOnLargeMessages) {
  AlphaBeta fit = fitAlphaBeta(
      line(30e-6, 2e9, {0.01, -0.02, 0.015, 0, -0.01, 0.02, -0.02, 0.02}));
  EXPECT_EQ(fit.method, "least_squares");
  EXPECT_NEAR(fit.alphaS, 30e-6, 3e-6);
  EXPECT_NEAR(fit.betaBytesPerS / 2e9, 1, 0.03);
}

TEST(AlphaBetaFit, ZeroLatencyIsSane) {
  AlphaBeta fit = fitAlphaBeta({{1 * kMiB, 1e-3}, {4 * kMiB, 4e-3}});
  EXPECT_EQ(fit.method, "least_squares");
  EXPECT_GE(fit.alphaS, 0);
  EXPECT_NEAR(fit.alphaS, 0, 1e-12);
  EXPECT_NEAR(fit.betaBytesPerS / (kMiB / 1e-3), 1, 1e-9);
}

// Time growing faster than the size (the small message served from cache,
// the large ones not): the line through them crosses zero at a positive
// size, a negative alpha, which the cost model must never see.
TEST(AlphaBetaFit, NegativeAlphaFallsBackToTheMedianEstimate) {
  std::vector<Sample> samples = {
      {64 * kKiB, 5e-6}, {1 * kMiB, 1e-3}, {16 * kMiB, 20e-3}};
  std::optional<AlphaBeta> raw = leastSquaresFit(samples);
  ASSERT_TRUE(raw.has_value());
  EXPECT_LT(raw->alphaS, 0);
  AlphaBeta fit = fitAlphaBeta(samples);
  EXPECT_EQ(fit.method, "median");
  EXPECT_NE(fit.warning.find("alpha"), std::string::npos) << fit.warning;
  EXPECT_GE(fit.alphaS, 0);
  EXPECT_GT(fit.betaBytesPerS, 0);
  EXPECT_TRUE(std::isfinite(fit.betaBytesPerS));
}

// Time falling with size (noise on a flat latency): beta would be negative.
TEST(AlphaBetaFit, ShrinkingTimeFallsBackToTheMedianEstimate) {
  AlphaBeta fit =
      fitAlphaBeta({{4 * kKiB, 3e-4}, {64 * kKiB, 2.5e-4}, {1 * kMiB, 2e-4}});
  EXPECT_EQ(fit.method, "median");
  EXPECT_NE(fit.warning.find("beta"), std::string::npos) << fit.warning;
  EXPECT_GE(fit.alphaS, 0);
  EXPECT_GT(fit.betaBytesPerS, 0);
}

TEST(AlphaBetaFit, OneSizeUsesTheMedianEstimate) {
  AlphaBeta fit = fitAlphaBeta({{1 * kMiB, 1e-3}});
  EXPECT_EQ(fit.method, "median");
  EXPECT_FALSE(fit.warning.empty());
  EXPECT_DOUBLE_EQ(fit.betaBytesPerS, kMiB / 1e-3);
  EXPECT_DOUBLE_EQ(fit.alphaS, 0);
}

TEST(AlphaBetaFit, EqualSizesHaveNoSlope) {
  EXPECT_FALSE(leastSquaresFit({{kMiB, 1e-3}, {kMiB, 2e-3}}).has_value());
  AlphaBeta fit = fitAlphaBeta({{kMiB, 1e-3}, {kMiB, 2e-3}});
  EXPECT_EQ(fit.method, "median");
  EXPECT_GT(fit.betaBytesPerS, 0);
}

TEST(AlphaBetaFit, MedianEstimateOfAnExactLine) {
  // beta from the larger half includes some alpha, so it is a little low;
  // alpha is what the small messages leave.
  AlphaBeta estimate = medianEstimate(line(30e-6, 2e9));
  EXPECT_NEAR(estimate.betaBytesPerS / 2e9, 1, 0.05);
  EXPECT_NEAR(estimate.alphaS, 30e-6, 5e-6);
}

TEST(AlphaBetaFit, RefusesBadSamples) {
  EXPECT_THROW(fitAlphaBeta({}), std::invalid_argument);
  EXPECT_THROW(fitAlphaBeta({{kMiB, 0}}), std::invalid_argument);
  EXPECT_THROW(fitAlphaBeta({{kMiB, -1e-3}, {2 * kMiB, 1e-3}}),
               std::invalid_argument);
  EXPECT_THROW(median({}), std::invalid_argument);
}

TEST(AlphaBetaFit, Median) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}
