//===- EmbeddingLossTest.cpp - embedding and cross-entropy ----------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

TEST(Embedding, LooksUpRows) {
  for (DType d : {DType::F32, DType::F64, DType::BF16}) {
    Tensor table = randomTensor({13, 7}, d, 1);
    for (DType idType : {DType::I32, DType::I64}) {
      Tensor ids =
          Tensor::fromVector(std::vector<int32_t>{0, 12, 5, 5, 3, 7}, {2, 3})
              .to(idType);
      Tensor out = embedding(table, ids);
      ASSERT_EQ(out.shape(), (Shape{2, 3, 7}));
      EXPECT_EQ(out.dtype(), d);
      for (int64_t t = 0; t < 6; ++t)
        for (int64_t j = 0; j < 7; ++j)
          EXPECT_EQ(out.getAsDouble(t * 7 + j),
                    table.getAsDouble(
                        static_cast<int64_t>(ids.getAsDouble(t)) * 7 + j));
    }
  }
}

TEST(Embedding, OutOfRangeIdNamesTheId) {
  Tensor table({13, 7}, DType::F32);
  Tensor ids = Tensor::fromVector(std::vector<int32_t>{0, 1, 13, 2}, {2, 2});
  expectError([&] { embedding(table, ids); },
              {"rtx.embedding", "id 13", "[1, 0]", "[0, 13)"});
  Tensor negative = Tensor::fromVector(std::vector<int32_t>{-1}, {1});
  expectError([&] { embedding(table, negative); }, {"id -1"});
  expectError([&] { embedding(table, Tensor({2}, DType::F32)); },
              {"rtx.embedding", "ids"});
}

/// Closed form: mean over counted tokens of logsumexp(row) - row[label].
double refCrossEntropy(const Tensor &logits, const std::vector<int> &labels,
                       int ignore) {
  int64_t v = logits.dim(logits.rank() - 1);
  std::vector<double> x = toDoubles(logits);
  double total = 0;
  int count = 0;
  for (size_t t = 0; t < labels.size(); ++t) {
    if (labels[t] == ignore)
      continue;
    // logsumexp shifted by the row's max, so large logits stay finite.
    double max = -INFINITY, sum = 0;
    for (int64_t i = 0; i < v; ++i)
      max = std::max(max, x[t * v + i]);
    for (int64_t i = 0; i < v; ++i)
      sum += std::exp(x[t * v + i] - max);
    total += max + std::log(sum) - x[t * v + labels[t]];
    ++count;
  }
  return count ? total / count : 0.0;
}

class CrossEntropyTest : public testing::TestWithParam<DType> {};

TEST_P(CrossEntropyTest, MatchesClosedFormWithIgnoreIndex) {
  DType d = GetParam();
  Tensor logits = randomTensor({3, 5, 65}, d, 2, -4, 4);
  std::vector<int> labels = {0, 64, 3,  -100, 7, 13, 13, -100,
                             2, 1,  60, 5,    9, 11, 40};
  Tensor lab = Tensor::fromVector(
      std::vector<int32_t>(labels.begin(), labels.end()), {3, 5});
  Tensor loss = crossEntropy(logits, lab, true, -100);
  EXPECT_EQ(loss.rank(), 0);
  EXPECT_EQ(loss.dtype(), d == DType::F64 ? DType::F64 : DType::F32);
  double ref = refCrossEntropy(logits, labels, -100);
  // The loss is computed from the exact (rounded) inputs in double: f32
  // output rounding is the only error.
  EXPECT_NEAR(loss.getAsDouble(0), ref,
              std::fabs(ref) * (d == DType::F64 ? 1e-13 : 1e-6));
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, CrossEntropyTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16),
                         dtypeParamName);

TEST(CrossEntropy, ClosedFormsAndEdgeCases) {
  // Uniform logits: the loss is log(V) for every label.
  Tensor uniform({4, 13}, DType::F32);
  Tensor lab = Tensor::fromVector(std::vector<int32_t>{0, 5, 12, 7}, {4});
  EXPECT_NEAR(crossEntropy(uniform, lab, false, 0).getAsDouble(0),
              std::log(13.0), 1e-6);
  // All ignored: 0, not NaN.
  Tensor ignored =
      Tensor::fromVector(std::vector<int32_t>{-1, -1, -1, -1}, {4});
  EXPECT_EQ(crossEntropy(uniform, ignored, true, -1).getAsDouble(0), 0.0);
  // Large logits are stable (logsumexp subtracts the max).
  Tensor big = randomTensor({2, 7}, DType::F32, 3, 5000, 5001);
  Tensor lab2 = Tensor::fromVector(std::vector<int32_t>{1, 6}, {2});
  double v = crossEntropy(big, lab2, false, 0).getAsDouble(0);
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(v, refCrossEntropy(big.to(DType::F64), {1, 6}, -12345), 1e-4);
  // Without an ignore index, -1 is an error naming the label.
  expectError([&] { crossEntropy(uniform, ignored, false, 0); },
              {"rtx.cross_entropy", "label -1", "[0]"});
  expectError([&] { crossEntropy(uniform, Tensor({3}, DType::I32), false, 0); },
              {"rtx.cross_entropy", "[3]", "[4, 13]"});
}

} // namespace
