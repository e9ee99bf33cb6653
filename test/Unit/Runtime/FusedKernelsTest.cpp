//===- FusedKernelsTest.cpp - the fused CPU kernels against the unfused ---===//
//
// Each fused kernel (runtime/lib/kernels/Fused.cpp) must return bit for bit
// what the kernels it replaces return, since the fusion passes promise an
// unchanged program: compared element by element, in f32, bf16 and f64, on
// odd shapes, with ignored labels and large logits.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// Same shape, dtype and bytes.
void expectBitwise(const Tensor &actual, const Tensor &expected,
                   const std::string &what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(),
                        actual.numel() * dtypeSize(actual.dtype())),
            0)
      << what << " differs from the unfused kernels' result";
}

Tensor labelsOf(int64_t tokens, int64_t vocab, unsigned seed,
                int64_t ignoreEvery = 0) {
  std::mt19937 gen(seed);
  Tensor t({tokens}, DType::I64);
  for (int64_t i = 0; i < tokens; ++i)
    t.setFromDouble(i, ignoreEvery && i % ignoreEvery == 1
                           ? -100.0
                           : static_cast<double>(gen() % vocab));
  return t;
}

} // namespace

TEST(FusedKernelsTest, AddLayerNormIsAddThenLayerNorm) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F64})
    for (int64_t d : {1, 7, 37, 769}) {
      Tensor x = randomTensor({3, d}, dtype, 1, -4, 4);
      Tensor r = randomTensor({3, d}, dtype, 2, -4, 4);
      Tensor g = randomTensor({d}, dtype, 3), b = randomTensor({d}, dtype, 4);
      Tensor sum = binary(BinaryKind::Add, x, r);
      std::string what =
          std::string(dtypeName(dtype)) + " width " + std::to_string(d);
      std::vector<Tensor> fused = addLayerNorm(x, r, g, b, 1e-5);
      expectBitwise(fused[0], sum, "sum, " + what);
      expectBitwise(fused[1], layerNorm(sum, g, b, 1e-5), "layernorm, " + what);
      fused = addLayerNorm(x, r, g, Tensor(), 1e-5);
      expectBitwise(fused[1], layerNorm(sum, g, Tensor(), 1e-5),
                    "layernorm without bias, " + what);
      fused = addRmsNorm(x, r, g, 1e-6);
      expectBitwise(fused[0], sum, "rms sum, " + what);
      expectBitwise(fused[1], rmsNorm(sum, g, 1e-6), "rmsnorm, " + what);
    }
}

TEST(FusedKernelsTest, AddNormRefusesMismatchedOperands) {
  Tensor x = randomTensor({2, 4}, DType::F32, 1);
  Tensor g = randomTensor({4}, DType::F32, 2);
  EXPECT_THROW(
      addLayerNorm(x, randomTensor({2, 5}, DType::F32, 3), g, Tensor(), 1e-5),
      Error);
  EXPECT_THROW(addRmsNorm(x, randomTensor({2, 4}, DType::BF16, 3), g, 1e-5),
               Error);
}

TEST(FusedKernelsTest, CrossEntropyWithGradIsTheLossAndItsGradient) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F64})
    for (int64_t ignoreEvery : {0, 3}) {
      // Large logits (the max subtraction matters) and a vocabulary longer
      // than the statistics' chunk (512).
      Tensor logits = randomTensor({2, 3, 1031}, dtype, 5, -60, 60);
      Tensor labels = labelsOf(6, 1031, 6, ignoreEvery).reshaped({2, 3});
      Tensor dloss = Tensor::scalar(0.75, DType::F32);
      bool ignore = ignoreEvery != 0;
      std::vector<Tensor> fused =
          crossEntropyWithGrad(logits, labels, dloss, ignore, -100);
      std::string what =
          std::string(dtypeName(dtype)) + (ignore ? ", some ignored" : "");
      expectBitwise(fused[0], crossEntropy(logits, labels, ignore, -100),
                    "loss, " + what);
      expectBitwise(fused[1],
                    crossEntropyGrad(logits, labels, dloss, ignore, -100),
                    "dlogits, " + what);
    }
}

TEST(FusedKernelsTest, CrossEntropyWithGradOfOnlyIgnoredTokens) {
  Tensor logits = randomTensor({4, 7}, DType::F32, 1);
  Tensor labels = Tensor::fromVector(std::vector<int32_t>{-1, -1, -1, -1}, {4});
  std::vector<Tensor> fused = crossEntropyWithGrad(
      logits, labels, Tensor::scalar(1.0, DType::F32), true, -1);
  EXPECT_EQ(fused[0].getAsDouble(0), 0.0);
  for (int64_t i = 0; i < fused[1].numel(); ++i)
    EXPECT_EQ(fused[1].getAsDouble(i), 0.0);
  EXPECT_THROW(crossEntropyWithGrad(
                   logits,
                   Tensor::fromVector(std::vector<int32_t>{0, 7, 0, 0}, {4}),
                   Tensor::scalar(1.0, DType::F32), false, 0),
               Error);
}

TEST(FusedKernelsTest, MultiAdamWIsEachUpdate) {
  for (DType paramType : {DType::F32, DType::BF16}) {
    std::vector<Tensor> params, grads, m, v;
    std::vector<Shape> shapes = {{37, 7}, {1}, {769}, {3, 5, 2}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      unsigned s = static_cast<unsigned>(10 * i);
      params.push_back(randomTensor(shapes[i], paramType, s + 1));
      grads.push_back(randomTensor(shapes[i], DType::F32, s + 2));
      m.push_back(randomTensor(shapes[i], DType::F32, s + 3, -0.1, 0.1));
      v.push_back(randomTensor(shapes[i], DType::F32, s + 4, 0.0, 0.01));
    }
    Tensor step = Tensor::scalar(3.0, DType::F32);
    std::vector<Tensor> fused =
        multiAdamwUpdate(params, grads, m, v, step, 1e-3, 0.9, 0.95, 1e-8, 0.1);
    ASSERT_EQ(fused.size(), 3 * shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<Tensor> one = adamwUpdate(params[i], grads[i], m[i], v[i],
                                            step, 1e-3, 0.9, 0.95, 1e-8, 0.1);
      std::string what = "tensor " + std::to_string(i);
      expectBitwise(fused[i], one[0], "param, " + what);
      expectBitwise(fused[shapes.size() + i], one[1], "exp_avg, " + what);
      expectBitwise(fused[2 * shapes.size() + i], one[2],
                    "exp_avg_sq, " + what);
    }
  }
}

TEST(FusedKernelsTest, MultiAdamWRefusesMixedDTypesAndUnequalLists) {
  Tensor a = randomTensor({3}, DType::F32, 1),
         b = randomTensor({3}, DType::BF16, 2);
  Tensor step = Tensor::scalar(1.0, DType::F32);
  EXPECT_THROW(multiAdamwUpdate({a, b}, {a, a}, {a, a}, {a, a}, step, 1e-3, 0.9,
                                0.999, 1e-8, 0.0),
               Error);
  EXPECT_THROW(multiAdamwUpdate({a, a}, {a}, {a, a}, {a, a}, step, 1e-3, 0.9,
                                0.999, 1e-8, 0.0),
               Error);
}

TEST(FusedKernelsTest, SumSquaresIsTheOptimizersChain) {
  // Longer than rtx.reduce's block (65536), so the block order matters.
  std::vector<Tensor> inputs = {randomTensor({70001}, DType::F32, 1, -3, 3),
                                randomTensor({37, 7}, DType::BF16, 2, -3, 3),
                                randomTensor({1}, DType::F32, 3),
                                randomTensor({0}, DType::F32, 4)};
  Tensor total = Tensor::scalar(0.0, DType::F32);
  for (const Tensor &g : inputs) {
    Tensor g32 = g.dtype() == DType::F32 ? g : convert(g, DType::F32);
    Tensor squares = binary(BinaryKind::Mul, g32, g32);
    std::vector<int64_t> dims(g.rank());
    for (int64_t d = 0; d < g.rank(); ++d)
      dims[d] = d;
    total = binary(BinaryKind::Add, total,
                   reduce(ReduceKind::Sum, squares, dims, false));
  }
  expectBitwise(sumSquares(inputs), total, "sum of squares");
  EXPECT_THROW(sumSquares({randomTensor({2}, DType::F64, 1)}), Error);
}
