//===- AttentionGradTest.cpp - gradients of attention ---------------------===//

#include "GradCheck.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

struct AttentionCase {
  Shape q, kv;
  bool causal;
  double scale;
};

/// dq, dk and dv against finite differences of rtx.attention, then the f32
/// kernel against the f64 one.
void checkAttentionGrad(const AttentionCase &c) {
  Tensor q = randomTensor(c.q, DType::F64, 1, -1.5, 1.5);
  Tensor k = randomTensor(c.kv, DType::F64, 2, -1.5, 1.5);
  Tensor v = randomTensor(c.kv, DType::F64, 3);
  Tensor r = randomTensor(c.q, DType::F64, 4);
  std::vector<Tensor> grads = attentionGrad(q, k, v, r, c.causal, c.scale);
  ASSERT_EQ(grads.size(), 3u);
  expectClose(grads[0], c.q,
              numericGrad(
                  [&](const Tensor &qp) {
                    return attention(qp, k, v, c.causal, c.scale);
                  },
                  q, r),
              kGradTolerance);
  expectClose(grads[1], c.kv,
              numericGrad(
                  [&](const Tensor &kp) {
                    return attention(q, kp, v, c.causal, c.scale);
                  },
                  k, r),
              kGradTolerance);
  expectClose(grads[2], c.kv,
              numericGrad(
                  [&](const Tensor &vp) {
                    return attention(q, k, vp, c.causal, c.scale);
                  },
                  v, r),
              kGradTolerance);

  Tensor q32 = q.to(DType::F32), k32 = k.to(DType::F32), v32 = v.to(DType::F32),
         r32 = r.to(DType::F32);
  std::vector<Tensor> g32 =
      attentionGrad(q32, k32, v32, r32, c.causal, c.scale);
  std::vector<Tensor> g64 =
      attentionGrad(q32.to(DType::F64), k32.to(DType::F64), v32.to(DType::F64),
                    r32.to(DType::F64), c.causal, c.scale);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    expectF32MatchesF64(g32[i], g64[i]);
  }
}

TEST(AttentionGrad, GroupedKvHeadsCausal) {
  // 4 query heads over 2 kv heads; odd batch, sequence and head sizes.
  checkAttentionGrad({{3, 4, 7, 5}, {3, 2, 7, 5}, true, 1.0 / std::sqrt(5.0)});
}

TEST(AttentionGrad, GroupedKvHeadsNonCausal) {
  checkAttentionGrad({{3, 4, 7, 5}, {3, 2, 7, 5}, false, 1.0 / std::sqrt(5.0)});
}

TEST(AttentionGrad, CrossAttentionMultiQuery) {
  // Sq != Skv, one kv head for three query heads, a custom scale.
  checkAttentionGrad({{1, 3, 5, 4}, {1, 1, 13, 4}, false, 0.37});
}

TEST(AttentionGrad, ManyRowBlocksAccumulateKeyValueGradients) {
  // group * Sq * Skv = 2 * 1031 * 1031 > 2^20 score elements: the rows of a
  // kv head are processed in several blocks whose dk/dv add up. Checked by
  // directional derivatives (full finite differences would be too slow).
  const Shape qs = {1, 2, 1031, 3}, kvs = {1, 1, 1031, 3};
  Tensor q = randomTensor(qs, DType::F64, 5);
  Tensor k = randomTensor(kvs, DType::F64, 6);
  Tensor v = randomTensor(kvs, DType::F64, 7);
  Tensor r = randomTensor(qs, DType::F64, 8);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal);
    std::vector<Tensor> g = attentionGrad(q, k, v, r, causal, 0.5);
    Tensor uq = randomTensor(qs, DType::F64, 9);
    Tensor ukv = randomTensor(kvs, DType::F64, 10);
    auto expectDirectional = [&](const Tensor &grad, const Tensor &u,
                                 double numeric) {
      double analytic = dotWith(grad, u);
      EXPECT_NEAR(analytic, numeric, 1e-7 * std::fabs(numeric));
    };
    expectDirectional(
        g[0], uq,
        numericDirectional(
            [&](const Tensor &qp) { return attention(qp, k, v, causal, 0.5); },
            q, uq, r));
    expectDirectional(
        g[1], ukv,
        numericDirectional(
            [&](const Tensor &kp) { return attention(q, kp, v, causal, 0.5); },
            k, ukv, r));
    expectDirectional(
        g[2], ukv,
        numericDirectional(
            [&](const Tensor &vp) { return attention(q, k, vp, causal, 0.5); },
            v, ukv, r));
  }
}

TEST(AttentionGrad, GroupedEqualsRepeatedKvHeadsSummed) {
  // With kv heads repeated by hand, dk/dv of a shared head is the sum of the
  // repeated heads' gradients.
  const int64_t b = 2, hq = 4, hkv = 2, s = 7, d = 5, group = hq / hkv;
  Tensor q = randomTensor({b, hq, s, d}, DType::F64, 11);
  Tensor k = randomTensor({b, hkv, s, d}, DType::F64, 12);
  Tensor v = randomTensor({b, hkv, s, d}, DType::F64, 13);
  Tensor r = randomTensor({b, hq, s, d}, DType::F64, 14);
  Tensor kr({b, hq, s, d}, DType::F64), vr({b, hq, s, d}, DType::F64);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < s * d; ++i) {
        int64_t src = (bi * hkv + h / group) * s * d + i;
        kr.setFromDouble((bi * hq + h) * s * d + i, k.getAsDouble(src));
        vr.setFromDouble((bi * hq + h) * s * d + i, v.getAsDouble(src));
      }
  std::vector<Tensor> grouped = attentionGrad(q, k, v, r, true, 0.4);
  std::vector<Tensor> repeated = attentionGrad(q, kr, vr, r, true, 0.4);
  expectClose(grouped[0], q.shape(), toDoubles(repeated[0]), 1e-13);
  for (int which : {1, 2}) {
    std::vector<double> summed(b * hkv * s * d, 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < hq; ++h)
        for (int64_t i = 0; i < s * d; ++i)
          summed[(bi * hkv + h / group) * s * d + i] +=
              repeated[which].getAsDouble((bi * hq + h) * s * d + i);
    expectClose(grouped[which], k.shape(), summed, 1e-13);
  }
}

TEST(AttentionGrad, SameBitsWithOneAndFourThreads) {
  int saved = getNumThreads();
  Tensor q = randomTensor({2, 4, 129, 32}, DType::F32, 15);
  Tensor k = randomTensor({2, 2, 129, 32}, DType::F32, 16);
  Tensor v = randomTensor({2, 2, 129, 32}, DType::F32, 17);
  Tensor r = randomTensor({2, 4, 129, 32}, DType::F32, 18);
  setNumThreads(1);
  std::vector<Tensor> one = attentionGrad(q, k, v, r, true, 0.2);
  setNumThreads(4);
  std::vector<Tensor> four = attentionGrad(q, k, v, r, true, 0.2);
  setNumThreads(saved);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(sameBits(one[i], four[i])) << "result " << i;
}

TEST(AttentionGrad, ErrorsNameOpAndShapes) {
  Tensor q({1, 4, 7, 8}, DType::F32), k({1, 3, 7, 8}, DType::F32);
  expectError([&] { attentionGrad(q, k, k, q, false, 0.5); },
              {"rtx.attention_grad", "4", "3"});
  Tensor k2({1, 2, 7, 8}, DType::F32);
  expectError(
      [&] {
        attentionGrad(q, k2, k2, Tensor({1, 4, 7, 7}, DType::F32), false, 0.5);
      },
      {"rtx.attention_grad", "result_grad", "[1, 4, 7, 7]"});
  Tensor k3({1, 2, 9, 8}, DType::F32);
  expectError([&] { attentionGrad(q, k3, k3, q, true, 0.5); },
              {"rtx.attention_grad", "Sq=7", "Skv=9"});
}

} // namespace
