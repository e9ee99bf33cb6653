//===- ShapeTest.cpp - reshape, transpose, slice, split, concat, broadcast ===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// Row-major multi-index of flat index i.
std::vector<int64_t> unflatten(int64_t i, const Shape &s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t> &idx, const Shape &s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + idx[d];
  return i;
}

const DType kAllTypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16,
                           DType::I1,  DType::I32, DType::I64};

TEST(Shape, ReshapeKeepsRowMajorOrder) {
  Tensor x = randomTensor({7, 13}, DType::F32, 1);
  Tensor y = reshape(x, {13, 7});
  EXPECT_EQ(y.shape(), (Shape{13, 7}));
  EXPECT_EQ(toDoubles(y), toDoubles(x));
  EXPECT_EQ(reshape(x, {91}).numel(), 91);
  expectError(
      [&] {
        reshape(x, {7, 12});
      },
      {"rtx.reshape", "[7, 13]", "[7, 12]"});
}

TEST(Shape, TransposeEveryPermutationOfRank3) {
  Shape s = {7, 13, 5};
  std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                             {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType d : kAllTypes) {
    Tensor x = randomTensor(s, d, 2, -50, 50);
    std::vector<double> xv = toDoubles(x);
    for (const auto &perm : perms) {
      Tensor y = transpose(x, perm);
      Shape ys = {s[perm[0]], s[perm[1]], s[perm[2]]};
      ASSERT_EQ(y.shape(), ys);
      for (int64_t i = 0; i < y.numel(); ++i) {
        std::vector<int64_t> yi = unflatten(i, ys), xi(3);
        for (int k = 0; k < 3; ++k)
          xi[perm[k]] = yi[k];
        ASSERT_EQ(y.getAsDouble(i), xv[flatten(xi, s)]) << dtypeName(d);
      }
    }
  }
  expectError(
      [&] {
        transpose(Tensor({2, 3}, DType::F32), {0, 0});
      },
      {"rtx.transpose", "[0, 0]"});
}

TEST(Shape, SliceAndSplit) {
  Shape s = {7, 13, 5};
  for (DType d : kAllTypes) {
    Tensor x = randomTensor(s, d, 3, -50, 50);
    std::vector<double> xv = toDoubles(x);
    Tensor y = slice(x, {1, 4, 0}, {6, 11, 5});
    ASSERT_EQ(y.shape(), (Shape{5, 7, 5}));
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::vector<int64_t> idx = unflatten(i, y.shape());
      idx[0] += 1;
      idx[1] += 4;
      ASSERT_EQ(y.getAsDouble(i), xv[flatten(idx, s)]);
    }
    std::vector<Tensor> parts = split(x, 1, {3, 0, 10});
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[1].shape(), (Shape{7, 0, 5}));
    EXPECT_TRUE(sameBits(parts[0], slice(x, {0, 0, 0}, {7, 3, 5})));
    EXPECT_TRUE(sameBits(parts[2], slice(x, {0, 3, 0}, {7, 13, 5})));
    // Concatenating the pieces gives the input back.
    EXPECT_TRUE(sameBits(concat(parts, 1), x)) << dtypeName(d);
  }
  Tensor x({7, 13}, DType::F32);
  expectError(
      [&] {
        slice(x, {0, 5}, {7, 14});
      },
      {"rtx.slice", "[5, 14)", "[7, 13]"});
  expectError([&] { split(x, 1, {6, 6}); }, {"rtx.split", "12", "[7, 13]"});
}

TEST(Shape, ConcatAlongEveryDim) {
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape sa = {7, 13, 5}, sb = sa;
    sb[dim] = 3;
    Tensor a = randomTensor(sa, DType::F32, 4),
           b = randomTensor(sb, DType::F32, 5);
    Tensor c = concat({a, b}, dim);
    Shape sc = sa;
    sc[dim] += 3;
    ASSERT_EQ(c.shape(), sc);
    std::vector<double> av = toDoubles(a), bv = toDoubles(b);
    for (int64_t i = 0; i < c.numel(); ++i) {
      std::vector<int64_t> idx = unflatten(i, sc);
      double expected;
      if (idx[dim] < sa[dim]) {
        expected = av[flatten(idx, sa)];
      } else {
        idx[dim] -= sa[dim];
        expected = bv[flatten(idx, sb)];
      }
      ASSERT_EQ(c.getAsDouble(i), expected) << "dim " << dim;
    }
  }
  expectError(
      [&] {
        concat({Tensor({2, 3}, DType::F32), Tensor({3, 3}, DType::F32)}, 1);
      },
      {"rtx.concat", "[3, 3]"});
  expectError(
      [&] {
        concat({Tensor({2, 3}, DType::F32), Tensor({2, 3}, DType::I32)}, 1);
      },
      {"rtx.concat", "i32"});
}

TEST(Shape, BroadcastNewAndUnitDims) {
  // [65] -> [3, 7, 65] with dims [2]: a bias over tokens.
  Tensor bias = randomTensor({65}, DType::F32, 6);
  Tensor b = broadcast(bias, {2}, {3, 7, 65});
  for (int64_t i = 0; i < b.numel(); ++i)
    ASSERT_EQ(b.getAsDouble(i), bias.getAsDouble(i % 65));
  // [7, 1] -> [7, 13] with dims [0, 1]: a size-1 dimension repeats.
  Tensor col = randomTensor({7, 1}, DType::BF16, 7);
  Tensor c = broadcast(col, {0, 1}, {7, 13});
  for (int64_t i = 0; i < c.numel(); ++i)
    ASSERT_EQ(c.getAsDouble(i), col.getAsDouble(i / 13));
  // [7] -> [7, 5, 13] with dims [0]: new trailing dimensions.
  Tensor v = randomTensor({7}, DType::I64, 8, -100, 100);
  Tensor w = broadcast(v, {0}, {7, 5, 13});
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_EQ(w.getAsDouble(i), v.getAsDouble(i / 65));
  // A scalar fills everything.
  Tensor s = broadcast(Tensor::scalar(2.5), {}, {3, 4});
  for (double x : toDoubles(s))
    EXPECT_EQ(x, 2.5);
  expectError(
      [&] {
        broadcast(Tensor({3}, DType::F32), {1}, {3, 4});
      },
      {"rtx.broadcast", "[3]", "[3, 4]"});
  expectError(
      [&] {
        broadcast(Tensor({3, 4}, DType::F32), {1, 0}, {4, 3});
      },
      {"rtx.broadcast", "increasing"});
}

} // namespace
