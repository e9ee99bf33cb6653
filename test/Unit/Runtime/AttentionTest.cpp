//===- AttentionTest.cpp - scaled dot-product attention -------------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// Naive attention in double, straight from the op description.
std::vector<double> refAttention(const Tensor &q, const Tensor &k,
                                 const Tensor &v, bool causal, double scale) {
  int64_t b = q.dim(0), hq = q.dim(1), sq = q.dim(2), d = q.dim(3);
  int64_t hkv = k.dim(1), skv = k.dim(2), group = hq / hkv;
  std::vector<double> qv = toDoubles(q), kv = toDoubles(k), vv = toDoubles(v);
  std::vector<double> out(qv.size(), 0.0);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kh = h / group;
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> s(skv, -INFINITY);
        double max = -INFINITY;
        for (int64_t j = 0; j < skv; ++j) {
          if (causal && j > i)
            continue;
          double dot = 0;
          for (int64_t x = 0; x < d; ++x)
            dot += qv[((bi * hq + h) * sq + i) * d + x] *
                   kv[((bi * hkv + kh) * skv + j) * d + x];
          s[j] = dot * scale;
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < skv; ++j) {
          s[j] = std::exp(s[j] - max);
          sum += s[j];
        }
        for (int64_t j = 0; j < skv; ++j)
          for (int64_t x = 0; x < d; ++x)
            out[((bi * hq + h) * sq + i) * d + x] +=
                s[j] / sum * vv[((bi * hkv + kh) * skv + j) * d + x];
      }
    }
  return out;
}

class AttentionTest : public testing::TestWithParam<DType> {};

TEST_P(AttentionTest, MatchesReference) {
  DType dt = GetParam();
  for (bool causal : {false, true}) {
    // Grouped: 6 query heads over 2 kv heads; odd sequence and head sizes.
    Tensor q = randomTensor({2, 6, 7, 13}, dt, 1);
    Tensor k = randomTensor({2, 2, 7, 13}, dt, 2);
    Tensor v = randomTensor({2, 2, 7, 13}, dt, 3);
    double scale = 1.0 / std::sqrt(13.0);
    SCOPED_TRACE(causal);
    expectClose(attention(q, k, v, causal, scale), q.shape(),
                refAttention(q, k, v, causal, scale));
  }
  // Cross attention: Sq != Skv, multi-query (one kv head).
  Tensor q = randomTensor({1, 3, 5, 16}, dt, 4);
  Tensor k = randomTensor({1, 1, 65, 16}, dt, 5);
  Tensor v = randomTensor({1, 1, 65, 16}, dt, 6);
  expectClose(attention(q, k, v, false, 0.3), q.shape(),
              refAttention(q, k, v, false, 0.3));
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, AttentionTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16,
                                         DType::F16),
                         dtypeParamName);

TEST(Attention, GroupedKvEqualsRepeatedKvHeads) {
  const int64_t b = 2, hq = 6, hkv = 3, s = 13, d = 8, group = hq / hkv;
  Tensor q = randomTensor({b, hq, s, d}, DType::F32, 7);
  Tensor k = randomTensor({b, hkv, s, d}, DType::F32, 8);
  Tensor v = randomTensor({b, hkv, s, d}, DType::F32, 9);
  // Repeat every kv head `group` times by hand: head h reads h / group.
  Tensor kr({b, hq, s, d}, DType::F32), vr({b, hq, s, d}, DType::F32);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < s * d; ++i) {
        int64_t src = (bi * hkv + h / group) * s * d + i;
        int64_t dst = (bi * hq + h) * s * d + i;
        kr.data<float>()[dst] = k.data<float>()[src];
        vr.data<float>()[dst] = v.data<float>()[src];
      }
  for (bool causal : {false, true}) {
    Tensor grouped = attention(q, k, v, causal, 0.25);
    Tensor repeated = attention(q, kr, vr, causal, 0.25);
    expectClose(grouped, repeated.shape(), toDoubles(repeated), 1e-6);
  }
}

TEST(Attention, CausalFirstRowIsFirstValue) {
  Tensor q = randomTensor({2, 4, 7, 13}, DType::F32, 10);
  Tensor k = randomTensor({2, 2, 7, 13}, DType::F32, 11);
  Tensor v = randomTensor({2, 2, 7, 13}, DType::F32, 12);
  Tensor o = attention(q, k, v, true, 0.5);
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t x = 0; x < 13; ++x)
        EXPECT_FLOAT_EQ(o.data<float>()[((bi * 4 + h) * 7 + 0) * 13 + x],
                        v.data<float>()[((bi * 2 + h / 2) * 7 + 0) * 13 + x]);
}

TEST(Attention, LongSequenceUsesSeveralScoreBlocks) {
  // 2 * 2100 query rows x 2100 keys: several 1M-element score blocks.
  Tensor q = randomTensor({1, 2, 2100, 4}, DType::F32, 13);
  Tensor k = randomTensor({1, 1, 2100, 4}, DType::F32, 14);
  Tensor v = randomTensor({1, 1, 2100, 4}, DType::F32, 15);
  expectClose(attention(q, k, v, true, 0.5), q.shape(),
              refAttention(q, k, v, true, 0.5));
}

TEST(Attention, ErrorsNameTheShapes) {
  Tensor q({1, 6, 7, 8}, DType::F32);
  expectError(
      [&] {
        attention(q, Tensor({1, 4, 7, 8}, DType::F32),
                  Tensor({1, 4, 7, 8}, DType::F32), false, 1);
      },
      {"rtx.attention", "6", "4"});
  expectError(
      [&] {
        attention(q, Tensor({1, 2, 9, 8}, DType::F32),
                  Tensor({1, 2, 9, 8}, DType::F32), true, 1);
      },
      {"rtx.attention", "Sq=7", "Skv=9"});
  expectError(
      [&] {
        attention(q, Tensor({1, 2, 7, 4}, DType::F32),
                  Tensor({1, 2, 7, 4}, DType::F32), false, 1);
      },
      {"rtx.attention", "[1, 2, 7, 4]"});
}

} // namespace
