//===- EmbeddingLossGradTest.cpp - embedding_grad, cross_entropy_grad -----===//

#include "GradCheck.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

TEST(EmbeddingGrad, MatchesFiniteDifferencesWithRepeatedIds) {
  const Shape table = {13, 7};
  Tensor w = randomTensor(table, DType::F64, 1);
  // Ids 5 and 12 repeat; rows 1, 2, 4, 6, 8... are never used (zero rows).
  std::vector<int32_t> idv = {0, 12, 5, 5, 3, 7, 12, 12, 9, 5, 11, 10, 5, 0, 3};
  for (DType idType : {DType::I32, DType::I64}) {
    SCOPED_TRACE(dtypeName(idType));
    Tensor ids = Tensor::fromVector(idv, {3, 5}).to(idType);
    Tensor r = randomTensor({3, 5, 7}, DType::F64, 2);
    std::vector<double> numeric =
        numericGrad([&](const Tensor &wp) { return embedding(wp, ids); }, w, r);
    // The lookup is linear: the differences are exact up to rounding.
    Tensor dw = embeddingGrad(ids, r, table);
    expectClose(dw, table, numeric, 1e-9);
    Tensor r32 = r.to(DType::F32);
    expectF32MatchesF64(embeddingGrad(ids, r32, table),
                        embeddingGrad(ids, r32.to(DType::F64), table));
  }
}

TEST(EmbeddingGrad, SumsInPositionOrder) {
  // 1 + 1e16 - 1e16 in f64 depends on the order: positions in order give
  // (1 + 1e16) - 1e16 = 0, as the documented fixed order says.
  Tensor ids = Tensor::fromVector(std::vector<int32_t>{2, 2, 2}, {3});
  Tensor dy = Tensor::fromVector(std::vector<double>{1.0, 1e16, -1e16}, {3, 1});
  Tensor dw = embeddingGrad(ids, dy, {4, 1});
  EXPECT_EQ(toDoubles(dw), (std::vector<double>{0, 0, 0, 0}));
  Tensor reversed =
      Tensor::fromVector(std::vector<double>{-1e16, 1e16, 1.0}, {3, 1});
  EXPECT_EQ(toDoubles(embeddingGrad(ids, reversed, {4, 1})),
            (std::vector<double>{0, 0, 1, 0}));
}

TEST(EmbeddingGrad, SameBitsWithOneAndFourThreads) {
  // Many repeats of few ids, over a table large enough to run in parallel.
  const int64_t positions = 4099, vocab = 5003, width = 64;
  std::vector<int32_t> idv(positions);
  for (int64_t p = 0; p < positions; ++p)
    idv[p] = static_cast<int32_t>((p * p * 7 + 3) % 311 * 16);
  Tensor ids = Tensor::fromVector(idv, {positions});
  Tensor dy = randomTensor({positions, width}, DType::F32, 3);
  int saved = getNumThreads();
  setNumThreads(1);
  Tensor one = embeddingGrad(ids, dy, {vocab, width});
  setNumThreads(4);
  Tensor four = embeddingGrad(ids, dy, {vocab, width});
  setNumThreads(saved);
  EXPECT_TRUE(sameBits(one, four));
  // And the sums are right (in double, position order).
  std::vector<double> ref(vocab * width, 0.0), dyv = toDoubles(dy);
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t j = 0; j < width; ++j)
      ref[idv[p] * width + j] += dyv[p * width + j];
  expectClose(four, {vocab, width}, ref, 1e-6);
}

TEST(EmbeddingGrad, BadIdsAndShapesAreErrors) {
  Tensor ids = Tensor::fromVector(std::vector<int32_t>{0, 1, 13, 2}, {2, 2});
  Tensor dy({2, 2, 7}, DType::F32);
  expectError(
      [&] {
        embeddingGrad(ids, dy, {13, 7});
      },
      {"rtx.embedding_grad", "id 13", "[1, 0]", "[0, 13)"});
  Tensor negative = Tensor::fromVector(std::vector<int32_t>{-1}, {1});
  expectError(
      [&] {
        embeddingGrad(negative, Tensor({1, 7}, DType::F32), {13, 7});
      },
      {"rtx.embedding_grad", "id -1"});
  expectError(
      [&] {
        embeddingGrad(ids, Tensor({2, 2, 6}, DType::F32), {13, 7});
      },
      {"rtx.embedding_grad", "[2, 2, 6]", "[2, 2, 7]"});
  expectError(
      [&] {
        embeddingGrad(ids, dy, {13, 7, 1});
      },
      {"rtx.embedding_grad", "[V, D]"});
}

class CrossEntropyGradTest : public testing::TestWithParam<bool> {};

TEST_P(CrossEntropyGradTest, MatchesFiniteDifferences) {
  bool hasIgnore = GetParam();
  Tensor logits = randomTensor({3, 5, 13}, DType::F64, 4, -4, 4);
  std::vector<int32_t> labels = {0, 12, 3,  -100, 7, 11, 11, -100,
                                 2, 1,  10, 5,    9, 4,  6};
  if (!hasIgnore)
    for (int32_t &l : labels)
      l = l < 0 ? 8 : l;
  Tensor lab = Tensor::fromVector(labels, {3, 5});
  Tensor dloss = Tensor::scalar(0.7, DType::F64);
  std::vector<double> numeric = numericGrad(
      [&](const Tensor &xp) { return crossEntropy(xp, lab, hasIgnore, -100); },
      logits, dloss);
  Tensor dx = crossEntropyGrad(logits, lab, dloss, hasIgnore, -100);
  expectClose(dx, logits.shape(), numeric, kGradTolerance);
  // Ignored tokens get exactly zero rows.
  for (int64_t t = 0; t < 15; ++t) {
    if (labels[t] != -100)
      continue;
    for (int64_t i = 0; i < 13; ++i)
      EXPECT_EQ(dx.getAsDouble(t * 13 + i), 0.0);
  }
  // f32 logits, with an f32 or an f64 loss gradient.
  Tensor x32 = logits.to(DType::F32);
  Tensor ref =
      crossEntropyGrad(x32.to(DType::F64), lab, dloss, hasIgnore, -100);
  expectF32MatchesF64(crossEntropyGrad(x32, lab, dloss, hasIgnore, -100), ref);
  expectF32MatchesF64(crossEntropyGrad(x32, lab,
                                       Tensor::scalar(0.7, DType::F32),
                                       hasIgnore, -100),
                      ref);
}

INSTANTIATE_TEST_SUITE_P(IgnoreIndex, CrossEntropyGradTest,
                         testing::Values(true, false),
                         [](const testing::TestParamInfo<bool> &info) {
                           return info.param ? std::string("WithIgnoreIndex")
                                             : std::string("NoIgnoreIndex");
                         });

TEST(CrossEntropyGrad, ClosedFormsAndEdgeCases) {
  // Uniform logits, one token: dloss * (1/V - onehot).
  Tensor uniform({1, 4}, DType::F32);
  Tensor lab = Tensor::fromVector(std::vector<int32_t>{2}, {1});
  EXPECT_EQ(
      toDoubles(crossEntropyGrad(uniform, lab, Tensor::scalar(2.0), false, 0)),
      (std::vector<double>{0.5, 0.5, -1.5, 0.5}));
  // All ignored: zeros, not NaN.
  Tensor logits = randomTensor({4, 13}, DType::F32, 5);
  Tensor ignored =
      Tensor::fromVector(std::vector<int32_t>{-1, -1, -1, -1}, {4});
  EXPECT_EQ(toDoubles(crossEntropyGrad(logits, ignored, Tensor::scalar(1.0),
                                       true, -1)),
            std::vector<double>(52, 0.0));
  // Large logits stay finite; every counted row sums to zero.
  Tensor big = randomTensor({2, 7}, DType::F32, 6, 5000, 5001);
  Tensor lab2 = Tensor::fromVector(std::vector<int32_t>{1, 6}, {2});
  std::vector<double> g =
      toDoubles(crossEntropyGrad(big, lab2, Tensor::scalar(1.0), false, 0));
  for (int64_t t = 0; t < 2; ++t) {
    double sum = 0;
    for (int64_t i = 0; i < 7; ++i) {
      ASSERT_TRUE(std::isfinite(g[t * 7 + i]));
      sum += g[t * 7 + i];
    }
    EXPECT_NEAR(sum, 0.0, 1e-7);
  }
  // Errors name the op, the label and the shapes.
  expectError(
      [&] { crossEntropyGrad(logits, ignored, Tensor::scalar(1.0), false, 0); },
      {"rtx.cross_entropy_grad", "label -1", "[0]"});
  expectError(
      [&] {
        crossEntropyGrad(logits, Tensor({3}, DType::I32), Tensor::scalar(1.0),
                         false, 0);
      },
      {"rtx.cross_entropy_grad", "[3]", "[4, 13]"});
  expectError(
      [&] {
        crossEntropyGrad(Tensor({2, 7}, DType::F32), lab2,
                         Tensor({1}, DType::F32), false, 0);
      },
      {"rtx.cross_entropy_grad", "loss_grad", "scalar"});
}

} // namespace
