//===- RandomTest.cpp - Philox KATs and the value mapping -----------------===//

#include "rtxrt/core/Random.h"

#include "TestUtil.h"

using namespace rtxrt;

namespace {

// Known-answer vectors of Philox4x32-10 from Random123's kat_vectors.
TEST(RandomTest, PhiloxKnownAnswerZero) {
  std::array<uint32_t, 4> r = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r, (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                        0x9b00dbd8}));
}

TEST(RandomTest, PhiloxKnownAnswerAllOnes) {
  std::array<uint32_t, 4> r =
      philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                 {0xffffffff, 0xffffffff});
  EXPECT_EQ(r, (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                        0x6d5451fd}));
}

TEST(RandomTest, PhiloxKnownAnswerPi) {
  std::array<uint32_t, 4> r =
      philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                 {0xa4093822, 0x299f31d0});
  EXPECT_EQ(r, (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                        0x24126ea1}));
}

TEST(RandomTest, KeysDependOnSeedAndName) {
  EXPECT_EQ(randomKey(7, "w"), randomKey(7, "w"));
  EXPECT_NE(randomKey(7, "w"), randomKey(8, "w"));
  EXPECT_NE(randomKey(7, "w"), randomKey(7, "b"));
  EXPECT_NE(randomKey(0, ""), randomKey(1, ""));
}

TEST(RandomTest, UniformIsInRangeAndUnbiased) {
  uint64_t key = randomKey(1, "u");
  const int n = 200000;
  double sum = 0.0, sumSq = 0.0;
  int buckets[10] = {};
  for (int i = 0; i < n; ++i) {
    double u = uniformAt(key, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sumSq += u * u;
    ++buckets[static_cast<int>(u * 10)];
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
  for (int b : buckets) // each ~ n/10 with sd ~ sqrt(n * 0.09) = 134
    EXPECT_NEAR(b, n / 10, 700);
  EXPECT_EQ(uniformAt(key, 12345), uniformAt(key, 12345));
}

TEST(RandomTest, NormalHasUnitMoments) {
  uint64_t key = randomKey(2, "n");
  const int n = 200000;
  double sum = 0.0, sumSq = 0.0, sum4 = 0.0;
  int beyond2 = 0;
  for (int i = 0; i < n; ++i) {
    double z = normalAt(key, i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sumSq += z * z;
    sum4 += z * z * z * z;
    beyond2 += std::fabs(z) > 2.0;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(sumSq / n, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(sum4 / n, 3.0, 0.1);
  // P(|z| > 2) = 0.0455.
  EXPECT_NEAR(static_cast<double>(beyond2) / n, 0.0455, 0.003);
}

} // namespace
