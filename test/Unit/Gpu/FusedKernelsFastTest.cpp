//===- FusedKernelsFastTest.cpp - fused fast kernels against portable -----===//
//
// The fast kernels of the fused ops (runtime/lib/gpu/fast/Fused*.cu) against
// their portable bodies (runtime/lib/gpu/Fused.cu) on random and adversarial
// shapes: one row, 50304 columns (GPT-2's padded vocabulary), odd widths
// (7, 37, 769), widths the 128-bit path does not cover, huge logits and
// -inf masks, bf16. SKIPPED without a GPU.
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#include <limits>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

Tensor dev(const Tensor &t) { return gpu::toDevice(t); }

std::vector<Tensor> devs(const std::vector<Tensor> &ts) {
  std::vector<Tensor> out;
  for (const Tensor &t : ts)
    out.push_back(dev(t));
  return out;
}

/// design.md §5: f32 forward 1e-5; bf16 1e-2 (one rounding of the output).
double toleranceOf(DType dtype) { return dtype == DType::BF16 ? 1e-2 : 1e-5; }

Tensor labelsFor(int64_t tokens, int64_t vocab, bool someIgnored) {
  Tensor labels({tokens}, DType::I64);
  for (int64_t t = 0; t < tokens; ++t)
    labels.setFromDouble(t, someIgnored && t % 3 == 1
                                ? -100.0
                                : static_cast<double>((t * 7919 + 3) % vocab));
  return labels;
}

} // namespace

TEST(FusedKernelsFastTest, AddNormMatchesPortable) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (Shape shape :
         {Shape{1, 7}, Shape{5, 37}, Shape{3, 769}, Shape{64, 768},
          Shape{2, 4096}, Shape{1, 8192}, Shape{1, 8193}, Shape{33, 1}}) {
      int64_t d = shape.back();
      Tensor x = dev(randomTensor(shape, dtype, 1, -8, 8));
      Tensor r = dev(randomTensor(shape, dtype, 2, -8, 8));
      Tensor g = dev(randomTensor({d}, dtype, 3));
      Tensor b = dev(randomTensor({d}, dtype, 4));
      std::string what =
          std::string(dtypeName(dtype)) + " " + shapeToString(shape);
      expectFastMatchesPortable(
          [&] { return gpu::addLayerNorm(x, r, g, b, 1e-5); },
          toleranceOf(dtype), "add_layernorm " + what);
      expectFastMatchesPortable(
          [&] { return gpu::addLayerNorm(x, r, g, Tensor(), 1e-5); },
          toleranceOf(dtype), "add_layernorm without bias " + what);
      expectFastMatchesPortable([&] { return gpu::addRmsNorm(x, r, g, 1e-6); },
                                toleranceOf(dtype), "add_rmsnorm " + what);
    }
}

TEST(FusedKernelsFastTest, AddNormOfLargeMeans) {
  RTX_REQUIRE_GPU();
  // A mean far from zero against a small spread: the centred variance.
  Tensor x = dev(randomTensor({4, 769}, DType::F32, 5, 999, 1001));
  Tensor r = dev(randomTensor({4, 769}, DType::F32, 6, -1, 1));
  Tensor g = dev(randomTensor({769}, DType::F32, 7));
  expectFastMatchesPortable(
      [&] { return gpu::addLayerNorm(x, r, g, Tensor(), 1e-5); }, 1e-4,
      "add_layernorm, mean 1000");
}

TEST(FusedKernelsFastTest, CrossEntropyWithGradMatchesPortable) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (Shape shape : {Shape{1, 50304}, Shape{8, 50304}, Shape{3, 7},
                        Shape{5, 37}, Shape{2, 3, 769}, Shape{4, 50257}})
      for (bool ignore : {false, true}) {
        int64_t vocab = shape.back();
        Tensor logits = randomTensor(shape, dtype, 8, -30, 30);
        Tensor labels = labelsFor(logits.numel() / vocab, vocab, ignore)
                            .reshaped(Shape(shape.begin(), shape.end() - 1));
        Tensor dloss = dev(Tensor::scalar(0.5, DType::F32));
        Tensor dl = dev(logits), dlab = dev(labels);
        std::string what = std::string(dtypeName(dtype)) + " " +
                           shapeToString(shape) +
                           (ignore ? ", some ignored" : "");
        expectFastMatchesPortable(
            [&] {
              return gpu::crossEntropyWithGrad(dl, dlab, dloss, ignore, -100);
            },
            toleranceOf(dtype), "cross_entropy_with_grad " + what);
      }
}

TEST(FusedKernelsFastTest, CrossEntropyWithGradOfHugeLogitsAndMasks) {
  RTX_REQUIRE_GPU();
  // Logits of 1e4 (exp overflows without the max), and -inf masks (padded
  // vocabulary entries) that must add nothing.
  Tensor logits = randomTensor({6, 1031}, DType::F32, 9, -1e4, 1e4);
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 1000; i < 1031; ++i)
      logits.setFromDouble(t * 1031 + i,
                           -std::numeric_limits<double>::infinity());
  Tensor labels = labelsFor(6, 1000, false);
  Tensor dl = dev(logits), dlab = dev(labels);
  Tensor dloss = dev(Tensor::scalar(1.0, DType::F32));
  expectFastMatchesPortable(
      [&] { return gpu::crossEntropyWithGrad(dl, dlab, dloss, false, 0); },
      1e-5, "cross_entropy_with_grad, huge logits and -inf masks");
  // Every token ignored: a zero loss and zero gradients on both paths.
  Tensor ignored = dev(Tensor::fromVector(std::vector<int32_t>(6, -1), {6}));
  expectFastMatchesPortable(
      [&] { return gpu::crossEntropyWithGrad(dl, ignored, dloss, true, -1); },
      0.0, "cross_entropy_with_grad, all ignored");
}

TEST(FusedKernelsFastTest, MultiAdamWMatchesPortable) {
  RTX_REQUIRE_GPU();
  for (DType paramType : {DType::F32, DType::BF16}) {
    std::vector<Tensor> params, grads, m, v;
    // Tails of every length, one element, several chunks (4096).
    std::vector<Shape> shapes = {{1},    {7},        {37, 7},    {769},
                                 {4097}, {50304, 3}, {768, 768}, {3}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      unsigned s = static_cast<unsigned>(10 * i);
      params.push_back(randomTensor(shapes[i], paramType, s + 1));
      grads.push_back(randomTensor(shapes[i], DType::F32, s + 2, -10, 10));
      m.push_back(randomTensor(shapes[i], DType::F32, s + 3, -0.1, 0.1));
      v.push_back(randomTensor(shapes[i], DType::F32, s + 4, 0.0, 0.01));
    }
    std::vector<Tensor> dp = devs(params), dg = devs(grads), dm = devs(m),
                        dv = devs(v);
    Tensor step = dev(Tensor::scalar(5.0, DType::F32));
    expectFastMatchesPortable(
        [&] {
          return gpu::multiAdamwUpdate(dp, dg, dm, dv, step, 1e-3, 0.9, 0.95,
                                       1e-8, 0.1);
        },
        paramType == DType::BF16 ? 1e-2 : 1e-5,
        std::string("multi_adamw_update, ") + dtypeName(paramType) + " params");
    // Step 5 of a warm-up over 2 and a cosine to step 9 (the rate on the
    // device, from the step tensor).
    expectFastMatchesPortable(
        [&] {
          return gpu::multiAdamwUpdate(dp, dg, dm, dv, step, 1e-3, 0.9, 0.95,
                                       1e-8, 0.1, 2, 9, 1e-4);
        },
        paramType == DType::BF16 ? 1e-2 : 1e-5,
        std::string("scheduled multi_adamw_update, ") + dtypeName(paramType) +
            " params");
  }
}

TEST(FusedKernelsFastTest, SumSquaresMatchesPortable) {
  RTX_REQUIRE_GPU();
  std::vector<Tensor> inputs = {
      randomTensor({70001}, DType::F32, 1, -3, 3),
      randomTensor({37, 7}, DType::BF16, 2, -3, 3),
      randomTensor({0}, DType::F32, 3), randomTensor({1}, DType::F32, 4),
      randomTensor({50304, 7}, DType::F32, 5, -1e3, 1e3)};
  std::vector<Tensor> d = devs(inputs);
  expectFastMatchesPortable(
      [&] { return std::vector<Tensor>{gpu::sumSquares(d)}; }, 1e-6,
      "sum_squares");
}

TEST(FusedKernelsFastTest, MultiAdamWOfMoreTensorsThanOneLaunchTakes) {
  RTX_REQUIRE_GPU();
  // 400 tensors (one table holds 384), some empty: two launches.
  std::vector<Tensor> params, grads, m, v;
  for (int i = 0; i < 400; ++i) {
    Shape shape{i % 50 == 7 ? 0 : 1 + i % 13};
    unsigned s = static_cast<unsigned>(4 * i);
    params.push_back(dev(randomTensor(shape, DType::F32, s + 1)));
    grads.push_back(dev(randomTensor(shape, DType::F32, s + 2)));
    m.push_back(dev(randomTensor(shape, DType::F32, s + 3, -0.1, 0.1)));
    v.push_back(dev(randomTensor(shape, DType::F32, s + 4, 0.0, 0.01)));
  }
  Tensor step = dev(Tensor::scalar(1.0, DType::F32));
  expectFastMatchesPortable(
      [&] {
        return gpu::multiAdamwUpdate(params, grads, m, v, step, 1e-3, 0.9,
                                     0.999, 1e-8, 0.01);
      },
      1e-5, "multi_adamw_update of 400 tensors");
}
