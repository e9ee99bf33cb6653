//===- DeterminismTest.cpp - results do not depend on the thread count ----===//
//
// The design's deterministic mode promises a fixed reduction order. Each
// kernel with a reduction runs with 1 thread and with 4 and must give the
// same bits. Sizes are large enough that the parallel paths are taken.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

class DeterminismTest : public testing::Test {
protected:
  void SetUp() override { saved = getNumThreads(); }
  void TearDown() override { setNumThreads(saved); }

  /// Runs f with 1 thread and with 4 and expects identical bits.
  template <typename F> void expectSameWithThreads(F &&f) {
    setNumThreads(1);
    Tensor one = f();
    setNumThreads(4);
    Tensor four = f();
    EXPECT_TRUE(sameBits(one, four));
  }
  int saved = 1;
};

TEST_F(DeterminismTest, ReductionsAndRowKernels) {
  Tensor x = randomTensor({3, 400001}, DType::F32, 1);
  expectSameWithThreads([&] { return reduce(ReduceKind::Sum, x, {1}, false); });
  expectSameWithThreads([&] {
    return reduce(ReduceKind::Sum, x, {0, 1}, false);
  });
  expectSameWithThreads([&] { return reduce(ReduceKind::Mean, x, {0}, true); });
  Tensor rows = randomTensor({513, 1023}, DType::F32, 2);
  Tensor g = randomTensor({1023}, DType::F32, 3);
  expectSameWithThreads([&] { return softmax(rows, 1); });
  expectSameWithThreads([&] { return softmax(rows, 0); });
  expectSameWithThreads([&] { return layerNorm(rows, g, g, 1e-5); });
  expectSameWithThreads([&] { return rmsNorm(rows, g, 1e-5); });
  Tensor labels(Shape{513}, DType::I32);
  for (int64_t i = 0; i < 513; ++i)
    labels.data<int32_t>()[i] = static_cast<int32_t>((i * 37) % 1023);
  expectSameWithThreads([&] { return crossEntropy(rows, labels, false, 0); });
}

TEST_F(DeterminismTest, ContractionsAndAttention) {
  Tensor a = randomTensor({257, 515}, DType::F32, 4);
  Tensor b = randomTensor({515, 263}, DType::F32, 5);
  expectSameWithThreads([&] { return matmul(a, b, false, false); });
  Tensor q = randomTensor({2, 4, 129, 32}, DType::F32, 6);
  Tensor k = randomTensor({2, 2, 129, 32}, DType::F32, 7);
  expectSameWithThreads([&] { return attention(q, k, k, true, 0.2); });
}

TEST_F(DeterminismTest, RandomKernels) {
  Tensor x = randomTensor({1000, 257}, DType::F32, 8);
  expectSameWithThreads([&] { return dropout(x, 0.1, 3); });
  expectSameWithThreads([&] {
    return initParameter("w", InitKind::Normal, 0, 1, 3, {1000, 257},
                         DType::F32);
  });
}

} // namespace
