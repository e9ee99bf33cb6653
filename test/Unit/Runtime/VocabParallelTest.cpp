//===- VocabParallelTest.cpp - vocab-parallel embedding and loss ----------===//
//
// The kernels rtx-partition uses for a vocabulary split over n ranks, run on
// each shard and combined the way the partitioned program combines them
// (sum of embeddings, max/sum of the statistics, concatenated gradients),
// against naive double-precision references of the whole-vocabulary maths.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/comm/Collectives.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

constexpr int64_t kVocab = 12, kWidth = 5;

Tensor ids() {
  return Tensor::fromVector(std::vector<int32_t>{0, 11, 5, 5, 3, 7, 4, 11},
                            {2, 4});
}

TEST(VocabParallel, EmbeddingShardsAddUpToTheLookup) {
  Tensor table = randomTensor({kVocab, kWidth}, DType::F32, 1);
  for (int64_t n : {1, 2, 3, 4}) {
    int64_t rows = kVocab / n;
    std::vector<double> sum(8 * kWidth, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      Tensor out =
          embedding(sliceGroup(table, 0, n, r), ids(), r * rows, kVocab);
      ASSERT_EQ(out.shape(), (Shape{2, 4, kWidth}));
      for (int64_t i = 0; i < out.numel(); ++i)
        sum[i] += out.getAsDouble(i);
    }
    // Naive: row ids[t] of the whole table.
    std::vector<double> expected;
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t j = 0; j < kWidth; ++j)
        expected.push_back(table.getAsDouble(
            static_cast<int64_t>(ids().getAsDouble(t)) * kWidth + j));
    EXPECT_EQ(sum, expected) << n << " shards";
  }
}

TEST(VocabParallel, EmbeddingShardChecksIdsAgainstTheWholeVocabulary) {
  Tensor shard({4, kWidth}, DType::F32);
  Tensor bad = Tensor::fromVector(std::vector<int32_t>{3, 12}, {2});
  expectError([&] { embedding(shard, bad, 8, kVocab); },
              {"rtx.embedding", "id 12", "[0, 12)"});
  expectError([&] { embedding(shard, bad, 10, kVocab); },
              {"rtx.embedding", "offset 10", "vocabulary of 12"});
}

TEST(VocabParallel, EmbeddingGradShardsConcatenateToTheScatterAdd) {
  Tensor dy = randomTensor({2, 4, kWidth}, DType::F32, 2);
  for (int64_t n : {2, 3, 4}) {
    int64_t rows = kVocab / n;
    std::vector<Tensor> shards;
    for (int64_t r = 0; r < n; ++r)
      shards.push_back(
          embeddingGrad(ids(), dy, {rows, kWidth}, r * rows, kVocab));
    // Naive: every position adds its dy row to its id's row.
    std::vector<double> expected(kVocab * kWidth, 0.0);
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t j = 0; j < kWidth; ++j)
        expected[static_cast<int64_t>(ids().getAsDouble(t)) * kWidth + j] +=
            dy.getAsDouble(t * kWidth + j);
    expectClose(concat(shards, 0), {kVocab, kWidth}, expected);
  }
}

/// The per-token statistics of n shards, combined as the partitioned program
/// combines them: all-reduce max, then sums of exp(x - max) and of the label
/// logit.
struct Combined {
  Tensor max, sumExp, labelLogit;
};

Combined combine(const Tensor &logits, const Tensor &labels, int64_t n,
                 bool hasIgnore, int64_t ignore) {
  int64_t tokens = labels.numel(), shard = kVocab / n;
  Combined c{Tensor(labels.shape(), DType::F32),
             Tensor(labels.shape(), DType::F32),
             Tensor(labels.shape(), DType::F32)};
  std::vector<Tensor> maxes, labelLogits;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<Tensor> stats =
        vocabLogitStats(sliceGroup(logits, 1, n, r), labels, r * shard, kVocab,
                        hasIgnore, ignore);
    maxes.push_back(stats[0]);
    labelLogits.push_back(stats[1]);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    double m = -INFINITY, label = 0;
    for (int64_t r = 0; r < n; ++r) {
      m = std::max(m, maxes[r].getAsDouble(t));
      label += labelLogits[r].getAsDouble(t);
    }
    double sum = 0;
    for (int64_t i = 0; i < kVocab; ++i)
      sum += std::exp(logits.getAsDouble(t * kVocab + i) - m);
    c.max.setFromDouble(t, m);
    c.sumExp.setFromDouble(t, sum);
    c.labelLogit.setFromDouble(t, label);
  }
  return c;
}

/// Naive whole-vocabulary loss and gradient (dloss = 1).
double refLoss(const Tensor &logits, const std::vector<int32_t> &labels,
               int32_t ignore, std::vector<double> *grad) {
  int64_t tokens = static_cast<int64_t>(labels.size());
  int64_t count = 0;
  for (int32_t label : labels)
    count += label != ignore;
  double total = 0;
  grad->assign(tokens * kVocab, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    if (labels[t] == ignore)
      continue;
    double sum = 0;
    for (int64_t i = 0; i < kVocab; ++i)
      sum += std::exp(logits.getAsDouble(t * kVocab + i));
    total += std::log(sum) - logits.getAsDouble(t * kVocab + labels[t]);
    for (int64_t i = 0; i < kVocab; ++i)
      (*grad)[t * kVocab + i] =
          (std::exp(logits.getAsDouble(t * kVocab + i)) / sum -
           (i == labels[t] ? 1.0 : 0.0)) /
          static_cast<double>(count);
  }
  return total / static_cast<double>(count);
}

TEST(VocabParallel, LossAndGradientFromShardsEqualTheWholeVocabulary) {
  // Large logits: the max shift is what keeps exp finite.
  Tensor logits = randomTensor({6, kVocab}, DType::F32, 3, -40.0, 60.0);
  std::vector<int32_t> labelValues{0, 11, 6, -1, 5, 7};
  Tensor labels = Tensor::fromVector(labelValues, {6});
  Tensor dloss = Tensor::scalar(1.0, DType::F32);
  // The naive reference in double with the shift, so it stays finite too.
  Tensor shifted(logits.shape(), DType::F64);
  for (int64_t t = 0; t < 6; ++t) {
    double m = -INFINITY;
    for (int64_t i = 0; i < kVocab; ++i)
      m = std::max(m, logits.getAsDouble(t * kVocab + i));
    for (int64_t i = 0; i < kVocab; ++i)
      shifted.setFromDouble(t * kVocab + i,
                            logits.getAsDouble(t * kVocab + i) - m);
  }
  std::vector<double> expectedGrad;
  double expectedLoss = refLoss(shifted, labelValues, -1, &expectedGrad);
  // Shifting every logit of a token leaves the loss unchanged.
  for (int64_t n : {1, 2, 3, 4}) {
    Combined c = combine(logits, labels, n, true, -1);
    Tensor loss =
        vocabCrossEntropy(c.max, c.sumExp, c.labelLogit, labels, true, -1);
    EXPECT_NEAR(loss.getAsDouble(0), expectedLoss, 1e-5 * expectedLoss)
        << n << " shards";
    std::vector<Tensor> grads;
    for (int64_t r = 0; r < n; ++r)
      grads.push_back(vocabCrossEntropyGrad(
          sliceGroup(logits, 1, n, r), labels, dloss, c.max, c.sumExp,
          r * (kVocab / n), kVocab, true, -1));
    expectClose(concat(grads, 1), {6, kVocab}, expectedGrad);
  }
}

TEST(VocabParallel, IgnoredLabelsAndEmptyBatches) {
  Tensor logits = randomTensor({2, kVocab}, DType::F64, 4);
  Tensor labels =
      Tensor::fromVector(std::vector<int32_t>{-100, -100}, {2}).to(DType::I64);
  std::vector<Tensor> stats =
      vocabLogitStats(logits, labels, 0, kVocab, true, -100);
  EXPECT_EQ(stats[0].dtype(), DType::F64);
  EXPECT_EQ(stats[1].getAsDouble(0), 0.0);
  EXPECT_EQ(vocabCrossEntropy(stats[0], stats[0], stats[1], labels, true, -100)
                .getAsDouble(0),
            0.0);
  Tensor grad =
      vocabCrossEntropyGrad(logits, labels, Tensor::scalar(1.0, DType::F64),
                            stats[0], stats[0], 0, kVocab, true, -100);
  for (int64_t i = 0; i < grad.numel(); ++i)
    EXPECT_EQ(grad.getAsDouble(i), 0.0);
}

TEST(VocabParallel, LabelsAreCheckedAgainstTheWholeVocabulary) {
  Tensor shard({2, 4}, DType::F32);
  Tensor labels = Tensor::fromVector(std::vector<int32_t>{11, 12}, {2});
  expectError([&] { vocabLogitStats(shard, labels, 8, kVocab, false, 0); },
              {"rtx.vocab_logit_stats", "label 12", "[0, 12)"});
  Tensor stat({2}, DType::F32);
  expectError(
      [&] {
        vocabCrossEntropyGrad(shard, labels, Tensor::scalar(1.0, DType::F32),
                              stat, stat, 10, kVocab, false, 0);
      },
      {"rtx.vocab_cross_entropy_grad", "label 12"});
}

} // namespace
