//===- NormalizationTest.cpp - layernorm, rmsnorm, softmax, rope ----------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

class NormalizationTest : public testing::TestWithParam<DType> {};

std::vector<double> refLayerNorm(const std::vector<double> &x,
                                 const std::vector<double> &g,
                                 const std::vector<double> *b, int64_t d,
                                 double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; ++i)
      mean += x[r * d + i];
    mean /= d;
    for (int64_t i = 0; i < d; ++i)
      var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= d; // biased
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = (x[r * d + i] - mean) / std::sqrt(var + eps) * g[i] +
                     (b ? (*b)[i] : 0.0);
  }
  return y;
}

TEST_P(NormalizationTest, LayerNormWithAndWithoutBias) {
  DType d = GetParam();
  const int64_t width = 65;
  Tensor x = randomTensor({3, 7, width}, d, 1, -2, 3);
  Tensor g = randomTensor({width}, d, 2, 0.5, 1.5);
  Tensor b = randomTensor({width}, d, 3);
  std::vector<double> xv = toDoubles(x), gv = toDoubles(g), bv = toDoubles(b);
  expectClose(layerNorm(x, g, b, 1e-5), {3, 7, width},
              refLayerNorm(xv, gv, &bv, width, 1e-5));
  expectClose(layerNorm(x, g, Tensor(), 1e-5), {3, 7, width},
              refLayerNorm(xv, gv, nullptr, width, 1e-5));
}

TEST_P(NormalizationTest, RmsNorm) {
  DType d = GetParam();
  const int64_t width = 13;
  Tensor x = randomTensor({7, width}, d, 4, -2, 2);
  Tensor g = randomTensor({width}, d, 5, 0.5, 1.5);
  std::vector<double> xv = toDoubles(x), gv = toDoubles(g), ref(xv.size());
  for (int64_t r = 0; r < 7; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < width; ++i)
      ms += xv[r * width + i] * xv[r * width + i];
    ms /= width;
    for (int64_t i = 0; i < width; ++i)
      ref[r * width + i] = xv[r * width + i] / std::sqrt(ms + 1e-6) * gv[i];
  }
  expectClose(rmsNorm(x, g, 1e-6), {7, width}, ref);
}

std::vector<double> refSoftmax(const std::vector<double> &x, const Shape &s,
                               int64_t dim) {
  int64_t n = s[dim], inner = 1;
  for (size_t i = dim + 1; i < s.size(); ++i)
    inner *= s[i];
  int64_t outer = static_cast<int64_t>(x.size()) / (n * inner);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += std::exp(x[(o * n + i) * inner + in]);
      for (int64_t i = 0; i < n; ++i)
        y[(o * n + i) * inner + in] =
            std::exp(x[(o * n + i) * inner + in]) / sum;
    }
  return y;
}

TEST_P(NormalizationTest, SoftmaxAlongEveryDim) {
  DType d = GetParam();
  Shape s = {3, 7, 13};
  Tensor x = randomTensor(s, d, 6, -3, 3);
  for (int64_t dim = 0; dim < 3; ++dim)
    expectClose(softmax(x, dim), s, refSoftmax(toDoubles(x), s, dim));
  expectClose(softmax(x, -1), s, refSoftmax(toDoubles(x), s, 2));
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, NormalizationTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16,
                                         DType::F16),
                         dtypeParamName);

TEST(Softmax, RowsSumToOneAndLargeInputsAreStable) {
  // exp(1000) overflows: only the max-subtracted form survives.
  Tensor x = randomTensor({7, 65}, DType::F32, 7, 990, 1010);
  Tensor p = softmax(x, 1);
  std::vector<double> pv = toDoubles(p);
  for (int64_t r = 0; r < 7; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < 65; ++i) {
      ASSERT_TRUE(std::isfinite(pv[r * 65 + i]));
      sum += pv[r * 65 + i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  // Shift invariance: softmax(x) == softmax(x - 1000), in double closed form.
  std::vector<double> shifted = toDoubles(x);
  for (double &v : shifted)
    v -= 1000;
  expectClose(p, {7, 65}, refSoftmax(shifted, {7, 65}, 1));
  // Uniform logits give 1/n exactly.
  Tensor u(Shape{2, 5}, DType::F32);
  for (double v : toDoubles(softmax(u, 1)))
    EXPECT_FLOAT_EQ(static_cast<float>(v), 0.2f);
}

TEST(LayerNorm, LargeMeanDoesNotCancel) {
  // Rows with mean 1e4 and spread 1: E[x^2] - mean^2 would lose ~8 digits in
  // f32; the kernel must still match the double reference.
  Tensor x = randomTensor({5, 65}, DType::F32, 8, 1e4 - 1, 1e4 + 1);
  Tensor g(Shape{65}, DType::F32);
  for (int i = 0; i < 65; ++i)
    g.setFromDouble(i, 1.0);
  expectClose(layerNorm(x, g, Tensor(), 1e-5), {5, 65},
              refLayerNorm(toDoubles(x), toDoubles(g), nullptr, 65, 1e-5));
}

TEST(NormalizationErrors, NameOpAndShape) {
  Tensor x({7, 13}, DType::F32);
  expectError([&] { layerNorm(x, Tensor({12}, DType::F32), Tensor(), 1e-5); },
              {"rtx.layernorm", "[12]"});
  expectError([&] { rmsNorm(x, Tensor({7}, DType::F32), 1e-5); },
              {"rtx.rmsnorm", "[7]"});
  expectError([&] { softmax(x, 2); }, {"rtx.softmax", "2"});
  expectError(
      [&] {
        rope(Tensor({1, 2, 3, 5}, DType::F32), 1e4, 0);
      },
      {"rtx.rope", "D=5"});
  expectError([&] { rope(x, 1e4, 0); }, {"rtx.rope", "[7, 13]"});
}

std::vector<double> refRope(const std::vector<double> &x, const Shape &s,
                            double theta, int64_t offset) {
  int64_t seq = s[2], d = s[3], half = d / 2;
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / d; ++row) {
    double pos = static_cast<double>(row % seq + offset);
    for (int64_t i = 0; i < half; ++i) {
      double angle = pos * std::pow(theta, -2.0 * i / d);
      double x1 = x[row * d + i], x2 = x[row * d + i + half];
      y[row * d + i] = x1 * std::cos(angle) - x2 * std::sin(angle);
      y[row * d + i + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
    }
  }
  return y;
}

class RopeTest : public testing::TestWithParam<DType> {};

TEST_P(RopeTest, MatchesReference) {
  DType d = GetParam();
  Shape s = {2, 3, 7, 26};
  Tensor x = randomTensor(s, d, 9);
  expectClose(rope(x, 10000.0, 0), s, refRope(toDoubles(x), s, 10000.0, 0));
  expectClose(rope(x, 500.0, 13), s, refRope(toDoubles(x), s, 500.0, 13));
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, RopeTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16),
                         dtypeParamName);

TEST(Rope, PositionZeroIsIdentityAndPairNormsArePreserved) {
  Shape s = {1, 2, 65, 8};
  Tensor x = randomTensor(s, DType::F64, 10);
  Tensor y = rope(x, 10000.0, 0);
  std::vector<double> xv = toDoubles(x), yv = toDoubles(y);
  const int64_t d = 8, half = 4;
  for (int64_t row = 0; row < 2 * 65; ++row) {
    for (int64_t i = 0; i < half; ++i) {
      double x1 = xv[row * d + i], x2 = xv[row * d + i + half];
      double y1 = yv[row * d + i], y2 = yv[row * d + i + half];
      EXPECT_NEAR(std::hypot(y1, y2), std::hypot(x1, x2), 1e-14);
      if (row % 65 == 0) { // position 0: angle 0
        EXPECT_EQ(y1, x1);
        EXPECT_EQ(y2, x2);
      }
    }
  }
  // Pair 0 of position 1 turns by exactly 1 radian.
  Tensor e(Shape{1, 1, 2, 2}, DType::F64);
  e.setFromDouble(2, 1.0); // position 1, x1 = 1, x2 = 0
  Tensor r = rope(e, 10000.0, 0);
  EXPECT_NEAR(r.getAsDouble(2), std::cos(1.0), 1e-15);
  EXPECT_NEAR(r.getAsDouble(3), std::sin(1.0), 1e-15);
}

} // namespace
