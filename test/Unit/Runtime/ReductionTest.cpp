//===- ReductionTest.cpp - reduce sum/mean/max/min ------------------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// Naive reduction in double over `dims` of a tensor of shape `s`.
std::vector<double> refReduce(ReduceKind kind, const std::vector<double> &x,
                              const Shape &s, const std::vector<int64_t> &dims,
                              Shape &resultShape, bool keepdim) {
  std::vector<bool> red(s.size(), false);
  for (int64_t d : dims)
    red[d] = true;
  resultShape.clear();
  Shape kept;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!red[d]) {
      resultShape.push_back(s[d]);
      kept.push_back(s[d]);
    } else if (keepdim) {
      resultShape.push_back(1);
    }
  }
  int64_t outN = numElements(kept);
  std::vector<double> acc(outN), count(outN, 0);
  for (int64_t o = 0; o < outN; ++o)
    acc[o] = kind == ReduceKind::Max   ? -INFINITY
             : kind == ReduceKind::Min ? INFINITY
                                       : 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    // Flat index of the kept coordinates.
    int64_t rem = static_cast<int64_t>(i), o = 0, mult = 1;
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
      int64_t c = rem % s[d];
      rem /= s[d];
      if (!red[d]) {
        o += c * mult;
        mult *= s[d];
      }
    }
    if (kind == ReduceKind::Max)
      acc[o] = std::max(acc[o], x[i]);
    else if (kind == ReduceKind::Min)
      acc[o] = std::min(acc[o], x[i]);
    else
      acc[o] += x[i];
    count[o] += 1;
  }
  if (kind == ReduceKind::Mean)
    for (int64_t o = 0; o < outN; ++o)
      acc[o] /= count[o];
  return acc;
}

class ReductionTest : public testing::TestWithParam<DType> {};

TEST_P(ReductionTest, AllKindsDimsAndKeepdim) {
  DType d = GetParam();
  Shape s = {7, 13, 5};
  Tensor x = randomTensor(s, d, 1, -2, 3);
  std::vector<std::vector<int64_t>> dimSets = {{0},    {1},    {2},
                                               {0, 2}, {1, 2}, {0, 1, 2}};
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min})
    for (const auto &dims : dimSets)
      for (bool keepdim : {false, true}) {
        Shape rs;
        std::vector<double> ref =
            refReduce(kind, toDoubles(x), s, dims, rs, keepdim);
        SCOPED_TRACE(testing::Message()
                     << "kind " << static_cast<int>(kind) << " dims "
                     << shapeToString(dims) << " keepdim " << keepdim);
        Tensor y = reduce(kind, x, dims, keepdim);
        EXPECT_EQ(y.dtype(), d);
        expectClose(y, rs, ref);
      }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ReductionTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16),
                         dtypeParamName);

TEST(Reduction, LongRowSpansSeveralBlocks) {
  // 300001 elements: several fixed-size blocks plus a ragged tail.
  Tensor x = randomTensor({2, 300001}, DType::F32, 2, 0, 1);
  Shape rs;
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min}) {
    std::vector<double> ref =
        refReduce(kind, toDoubles(x), x.shape(), {1}, rs, false);
    expectClose(reduce(kind, x, {1}, false), {2}, ref, 1e-7);
  }
}

TEST(Reduction, EdgeCases) {
  Tensor x = randomTensor({7, 13}, DType::F32, 3);
  // No dims: identity.
  EXPECT_TRUE(sameBits(reduce(ReduceKind::Sum, x, {}, false), x));
  // NaN propagates through max and min.
  Tensor n = Tensor::fromVector(std::vector<float>{1, NAN, 3, 4, 5, 6}, {2, 3});
  Tensor mx = reduce(ReduceKind::Max, n, {1}, false);
  EXPECT_TRUE(std::isnan(mx.getAsDouble(0)));
  EXPECT_EQ(mx.getAsDouble(1), 6.0);
  EXPECT_TRUE(
      std::isnan(reduce(ReduceKind::Min, n, {0, 1}, false).getAsDouble(0)));
  // Reducing everything gives a rank-0 tensor, or [1, 1] with keepdim.
  EXPECT_EQ(reduce(ReduceKind::Sum, x, {0, 1}, false).rank(), 0);
  EXPECT_EQ(reduce(ReduceKind::Sum, x, {0, 1}, true).shape(), (Shape{1, 1}));
  // Empty reductions: sum 0; max is an error.
  Tensor e({3, 0}, DType::F32);
  EXPECT_EQ(toDoubles(reduce(ReduceKind::Sum, e, {1}, false)),
            (std::vector<double>{0, 0, 0}));
  expectError([&] { reduce(ReduceKind::Max, e, {1}, false); },
              {"rtx.reduce max", "[3, 0]"});
  expectError(
      [&] {
        reduce(ReduceKind::Sum, x, {1, 0}, false);
      },
      {"rtx.reduce sum", "[1, 0]"});
  expectError([&] { reduce(ReduceKind::Sum, x, {2}, false); },
              {"rtx.reduce sum", "[7, 13]"});
}

} // namespace
