//===- NormalizationGradTest.cpp - layernorm_grad, rmsnorm_grad -----------===//

#include "GradCheck.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

TEST(LayerNormGrad, MatchesFiniteDifferences) {
  const int64_t width = 13;
  Shape s = {3, 7, width};
  Tensor x = randomTensor(s, DType::F64, 1, -2, 3);
  Tensor g = randomTensor({width}, DType::F64, 2, 0.5, 1.5);
  Tensor b = randomTensor({width}, DType::F64, 3);
  Tensor r = randomTensor(s, DType::F64, 4);
  const double eps = 1e-5;
  std::vector<Tensor> grads = layerNormGrad(x, g, r, eps);
  ASSERT_EQ(grads.size(), 3u);
  expectClose(
      grads[0], s,
      numericGrad([&](const Tensor &xp) { return layerNorm(xp, g, b, eps); }, x,
                  r),
      kGradTolerance);
  expectClose(
      grads[1], {width},
      numericGrad([&](const Tensor &gp) { return layerNorm(x, gp, b, eps); }, g,
                  r),
      kGradTolerance);
  expectClose(
      grads[2], {width},
      numericGrad([&](const Tensor &bp) { return layerNorm(x, g, bp, eps); }, b,
                  r),
      kGradTolerance);
  // Without a bias the forward differs by a constant: same dx and dscale.
  expectClose(
      grads[0], s,
      numericGrad(
          [&](const Tensor &xp) { return layerNorm(xp, g, Tensor(), eps); }, x,
          r),
      kGradTolerance);
}

TEST(LayerNormGrad, F32MatchesF64) {
  const int64_t width = 65;
  Shape s = {5, 7, width};
  Tensor x = randomTensor(s, DType::F32, 5, -2, 3);
  Tensor g = randomTensor({width}, DType::F32, 6, 0.5, 1.5);
  Tensor r = randomTensor(s, DType::F32, 7);
  std::vector<Tensor> g32 = layerNormGrad(x, g, r, 1e-5);
  std::vector<Tensor> g64 =
      layerNormGrad(x.to(DType::F64), g.to(DType::F64), r.to(DType::F64), 1e-5);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    expectF32MatchesF64(g32[i], g64[i]);
  }
  // bf16 activations: rounded once from the f32 computation.
  std::vector<Tensor> g16 = layerNormGrad(x.to(DType::BF16), g.to(DType::BF16),
                                          r.to(DType::BF16), 1e-5);
  std::vector<Tensor> ref = layerNormGrad(
      x.to(DType::BF16).to(DType::F64), g.to(DType::BF16).to(DType::F64),
      r.to(DType::BF16).to(DType::F64), 1e-5);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(g16[i].dtype(), DType::BF16);
    expectClose(g16[i], ref[i].shape(), toDoubles(ref[i]), 1e-2);
  }
}

TEST(RmsNormGrad, MatchesFiniteDifferences) {
  const int64_t width = 13;
  Shape s = {5, 7, width};
  Tensor x = randomTensor(s, DType::F64, 8, -2, 2);
  Tensor g = randomTensor({width}, DType::F64, 9, 0.5, 1.5);
  Tensor r = randomTensor(s, DType::F64, 10);
  const double eps = 1e-6;
  std::vector<Tensor> grads = rmsNormGrad(x, g, r, eps);
  ASSERT_EQ(grads.size(), 2u);
  expectClose(
      grads[0], s,
      numericGrad([&](const Tensor &xp) { return rmsNorm(xp, g, eps); }, x, r),
      kGradTolerance);
  expectClose(
      grads[1], {width},
      numericGrad([&](const Tensor &gp) { return rmsNorm(x, gp, eps); }, g, r),
      kGradTolerance);
}

TEST(RmsNormGrad, F32MatchesF64) {
  const int64_t width = 33;
  Shape s = {7, width};
  Tensor x = randomTensor(s, DType::F32, 11, -2, 2);
  Tensor g = randomTensor({width}, DType::F32, 12, 0.5, 1.5);
  Tensor r = randomTensor(s, DType::F32, 13);
  std::vector<Tensor> g32 = rmsNormGrad(x, g, r, 1e-6);
  std::vector<Tensor> g64 =
      rmsNormGrad(x.to(DType::F64), g.to(DType::F64), r.to(DType::F64), 1e-6);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    expectF32MatchesF64(g32[i], g64[i]);
  }
}

TEST(NormalizationGrad, ScaleGradientsSumOverManyRowBlocks) {
  // Enough rows for several row blocks: dscale and dbias add the blocks'
  // partial sums. dbias is the column sum of dy, checked in closed form.
  const int64_t rows = 8191, width = 33;
  Tensor x = randomTensor({rows, width}, DType::F64, 14);
  Tensor g = randomTensor({width}, DType::F64, 15, 0.5, 1.5);
  Tensor r = randomTensor({rows, width}, DType::F64, 16);
  std::vector<double> rv = toDoubles(r), colSum(width, 0.0);
  for (int64_t i = 0; i < rows * width; ++i)
    colSum[i % width] += rv[i];
  expectClose(layerNormGrad(x, g, r, 1e-5)[2], {width}, colSum, 1e-13);
  // dscale of rmsnorm: sum over rows of dy * x * rstd.
  std::vector<double> xv = toDoubles(x), dg(width, 0.0);
  for (int64_t row = 0; row < rows; ++row) {
    double ms = 0;
    for (int64_t i = 0; i < width; ++i)
      ms += xv[row * width + i] * xv[row * width + i];
    double rstd = 1.0 / std::sqrt(ms / width + 1e-6);
    for (int64_t i = 0; i < width; ++i)
      dg[i] += rv[row * width + i] * xv[row * width + i] * rstd;
  }
  expectClose(rmsNormGrad(x, g, r, 1e-6)[1], {width}, dg, 1e-12);
}

TEST(NormalizationGrad, SameBitsWithOneAndFourThreads) {
  int saved = getNumThreads();
  Tensor x = randomTensor({8191, 33}, DType::F32, 17);
  Tensor g = randomTensor({33}, DType::F32, 18);
  Tensor r = randomTensor({8191, 33}, DType::F32, 19);
  setNumThreads(1);
  std::vector<Tensor> ln1 = layerNormGrad(x, g, r, 1e-5);
  std::vector<Tensor> rms1 = rmsNormGrad(x, g, r, 1e-5);
  setNumThreads(4);
  std::vector<Tensor> ln4 = layerNormGrad(x, g, r, 1e-5);
  std::vector<Tensor> rms4 = rmsNormGrad(x, g, r, 1e-5);
  setNumThreads(saved);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(sameBits(ln1[i], ln4[i])) << "layernorm_grad result " << i;
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(sameBits(rms1[i], rms4[i])) << "rmsnorm_grad result " << i;
}

TEST(NormalizationGrad, ErrorsNameOpAndShape) {
  Tensor x({7, 13}, DType::F32);
  expectError([&] { layerNormGrad(x, Tensor({12}, DType::F32), x, 1e-5); },
              {"rtx.layernorm_grad", "[12]"});
  expectError(
      [&] {
        rmsNormGrad(x, Tensor({13}, DType::F32), Tensor({7, 12}, DType::F32),
                    1e-5);
      },
      {"rtx.rmsnorm_grad", "[7, 12]"});
  expectError(
      [&] {
        layerNormGrad(Tensor::scalar(1.0), Tensor({1}, DType::F32),
                      Tensor::scalar(1.0), 1e-5);
      },
      {"rtx.layernorm_grad", "scalar"});
}

} // namespace
