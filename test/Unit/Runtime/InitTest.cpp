//===- InitTest.cpp - counter-based parameter initialisation --------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

TEST(Init, NormalHasRequestedMeanAndStd) {
  const int64_t n = 100000;
  Tensor w = initParameter("h.0.mlp.c_fc.weight", InitKind::Normal, 0.5, 0.02,
                           7, {n}, DType::F32);
  double sum = 0, sumSq = 0;
  for (double v : toDoubles(w)) {
    sum += v;
    sumSq += v * v;
  }
  double mean = sum / n, sd = std::sqrt(sumSq / n - mean * mean);
  // 5 standard errors: sd/sqrt(n) for the mean, sd/sqrt(2n) for the sd.
  EXPECT_NEAR(mean, 0.5, 5 * 0.02 / std::sqrt(n));
  EXPECT_NEAR(sd, 0.02, 5 * 0.02 / std::sqrt(2.0 * n));
}

TEST(Init, UniformStaysInRange) {
  const int64_t n = 100000;
  Tensor w =
      initParameter("u", InitKind::Uniform, -0.1, 0.3, 3, {n}, DType::F32);
  double sum = 0, lo = 1, hi = -1;
  for (double v : toDoubles(w)) {
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, static_cast<double>(-0.1f));
  EXPECT_LE(hi, static_cast<double>(0.3f));
  EXPECT_LT(lo, -0.099); // and it does reach both ends
  EXPECT_GT(hi, 0.299);
  // Mean 0.1, sd of the mean 0.4/sqrt(12 n).
  EXPECT_NEAR(sum / n, 0.1, 5 * 0.4 / std::sqrt(12.0 * n));
}

TEST(Init, ShardEqualsSliceOfTheFullTensor) {
  for (InitKind kind : {InitKind::Normal, InitKind::Uniform}) {
    Tensor full =
        initParameter("wte", kind, 0.0, 1.0, 11, {13, 65}, DType::F32);
    // A [5, 20] shard at (7, 30), as a rank would own under a 2-D mesh.
    Tensor shard = initParameter("wte", kind, 0.0, 1.0, 11, {5, 20}, DType::F32,
                                 {13, 65}, {7, 30});
    EXPECT_TRUE(sameBits(shard, slice(full, {7, 30}, {12, 50})));
    // A row shard of a rank-3 tensor.
    Tensor full3 =
        initParameter("b", kind, 0.0, 1.0, 11, {4, 7, 13}, DType::F64);
    Tensor shard3 = initParameter("b", kind, 0.0, 1.0, 11, {2, 7, 13},
                                  DType::F64, {4, 7, 13}, {2, 0, 0});
    EXPECT_TRUE(sameBits(shard3, slice(full3, {2, 0, 0}, {4, 7, 13})));
  }
  expectError(
      [&] {
        initParameter("w", InitKind::Normal, 0, 1, 0, {5, 20}, DType::F32,
                      {13, 65}, {9, 30});
      },
      {"\"w\"", "[13, 65]"});
}

// A shape whose element count wraps to 0 (2^32 x 2^32) or to a small
// number is an Error naming the parameter and the shape, not an empty
// parameter or a write past a small buffer.
TEST(Init, RefusesShapesWhoseSizeOverflows) {
  const int64_t big = int64_t{1} << 32;
  expectError(
      [&] {
        initParameter("w", InitKind::Normal, 0, 1, 0, {big, big}, DType::F32);
      },
      {"rtx.param \"w\"", "[4294967296, 4294967296]", "int64"});
  expectError(
      [&] {
        initParameter("w", InitKind::Ones, 0, 1, 0, {big, big + 1},
                      DType::BF16);
      },
      {"[4294967296, 4294967297]", "int64"});
}

TEST(Init, SameSeedAndNameSameValues) {
  Tensor a = initParameter("w", InitKind::Normal, 0, 1, 5, {7, 13}, DType::F32);
  Tensor b = initParameter("w", InitKind::Normal, 0, 1, 5, {7, 13}, DType::F32);
  Tensor c = initParameter("v", InitKind::Normal, 0, 1, 5, {7, 13}, DType::F32);
  Tensor d = initParameter("w", InitKind::Normal, 0, 1, 6, {7, 13}, DType::F32);
  EXPECT_TRUE(sameBits(a, b));
  // Other name or seed: (almost) every element differs.
  int equalC = 0, equalD = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    equalC += a.getAsDouble(i) == c.getAsDouble(i);
    equalD += a.getAsDouble(i) == d.getAsDouble(i);
  }
  EXPECT_EQ(equalC, 0);
  EXPECT_EQ(equalD, 0);
}

TEST(Init, ConstantKindsAndDTypes) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    for (double v :
         toDoubles(initParameter("z", InitKind::Zeros, 0, 0, 0, {7}, d)))
      EXPECT_EQ(v, 0.0);
    for (double v :
         toDoubles(initParameter("o", InitKind::Ones, 0, 0, 0, {7}, d)))
      EXPECT_EQ(v, 1.0);
    for (double v :
         toDoubles(initParameter("c", InitKind::Constant, 0.25, 0, 0, {7}, d)))
      EXPECT_EQ(v, 0.25);
  }
  // bf16 values are the f32 values rounded once.
  Tensor f = initParameter("w", InitKind::Normal, 0, 1, 1, {65}, DType::F32);
  Tensor h = initParameter("w", InitKind::Normal, 0, 1, 1, {65}, DType::BF16);
  EXPECT_TRUE(sameBits(h, f.to(DType::BF16)));
  expectError(
      [&] { initParameter("i", InitKind::Ones, 0, 0, 0, {3}, DType::I32); },
      {"\"i\"", "i32"});
}

} // namespace
