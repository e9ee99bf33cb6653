//===- ElementwiseTest.cpp - unary, binary, compare, select, dropout ------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

double refUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg:
    return -x;
  case UnaryKind::Exp:
    return std::exp(x);
  case UnaryKind::Log:
    return std::log(x);
  case UnaryKind::Sqrt:
    return std::sqrt(x);
  case UnaryKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case UnaryKind::Tanh:
    return std::tanh(x);
  case UnaryKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryKind::Relu:
    return x > 0 ? x : 0.0;
  case UnaryKind::Silu:
    return x / (1.0 + std::exp(-x));
  case UnaryKind::Gelu: // x * Phi(x), Phi via erfc for accuracy
    return x * 0.5 * std::erfc(-x / std::sqrt(2.0));
  case UnaryKind::GeluTanh:
    return 0.5 * x *
           (1.0 +
            std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return 0.0;
}

const UnaryKind kUnaryKinds[] = {
    UnaryKind::Neg,   UnaryKind::Exp,  UnaryKind::Log,     UnaryKind::Sqrt,
    UnaryKind::Rsqrt, UnaryKind::Tanh, UnaryKind::Sigmoid, UnaryKind::Relu,
    UnaryKind::Silu,  UnaryKind::Gelu, UnaryKind::GeluTanh};

class ElementwiseTest : public testing::TestWithParam<DType> {};

TEST_P(ElementwiseTest, EveryUnaryKindMatchesClosedForm) {
  DType d = GetParam();
  for (UnaryKind kind : kUnaryKinds) {
    bool positive = kind == UnaryKind::Log || kind == UnaryKind::Sqrt ||
                    kind == UnaryKind::Rsqrt;
    Tensor x = randomTensor({7, 13}, d, 11, positive ? 0.05 : -4.0, 4.0);
    std::vector<double> ref;
    for (double v : toDoubles(x))
      ref.push_back(refUnary(kind, v));
    SCOPED_TRACE(static_cast<int>(kind));
    Tensor y = unary(kind, x);
    EXPECT_EQ(y.dtype(), d);
    expectClose(y, {7, 13}, ref);
  }
}

TEST(ElementwiseKnownValues, GeluAtOne) {
  // Phi(1) = 0.8413447460685429.
  Tensor one = Tensor::fromVector(std::vector<double>{1.0, -1.0}, {2});
  Tensor g = unary(UnaryKind::Gelu, one);
  EXPECT_NEAR(g.getAsDouble(0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(g.getAsDouble(1), -0.15865525393145707, 1e-15);
  Tensor t = unary(UnaryKind::GeluTanh, one);
  EXPECT_NEAR(t.getAsDouble(0), 0.8411919906082768, 1e-15);
}

double refBinary(BinaryKind kind, double a, double b) {
  switch (kind) {
  case BinaryKind::Add:
    return a + b;
  case BinaryKind::Sub:
    return a - b;
  case BinaryKind::Mul:
    return a * b;
  case BinaryKind::Div:
    return a / b;
  case BinaryKind::Maximum:
    return a > b ? a : b;
  case BinaryKind::Minimum:
    return a < b ? a : b;
  }
  return 0.0;
}

TEST_P(ElementwiseTest, EveryBinaryKindMatchesReference) {
  DType d = GetParam();
  Tensor a = randomTensor({7, 13, 3}, d, 12, -3, 3);
  Tensor b = randomTensor({7, 13, 3}, d, 13, 0.5, 3);
  for (BinaryKind kind :
       {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div,
        BinaryKind::Maximum, BinaryKind::Minimum}) {
    std::vector<double> av = toDoubles(a), bv = toDoubles(b), ref;
    for (size_t i = 0; i < av.size(); ++i)
      ref.push_back(refBinary(kind, av[i], bv[i]));
    SCOPED_TRACE(static_cast<int>(kind));
    expectClose(binary(kind, a, b), {7, 13, 3}, ref);
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ElementwiseTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16,
                                         DType::F16),
                         dtypeParamName);

TEST(ElementwiseBinary, MaximumPropagatesNaN) {
  Tensor a = Tensor::fromVector(std::vector<float>{NAN, 1.0f, 2.0f}, {3});
  Tensor b = Tensor::fromVector(std::vector<float>{0.0f, NAN, 1.0f}, {3});
  Tensor mx = binary(BinaryKind::Maximum, a, b);
  Tensor mn = binary(BinaryKind::Minimum, a, b);
  EXPECT_TRUE(std::isnan(mx.getAsDouble(0)));
  EXPECT_TRUE(std::isnan(mx.getAsDouble(1)));
  EXPECT_EQ(mx.getAsDouble(2), 2.0);
  EXPECT_TRUE(std::isnan(mn.getAsDouble(0)));
  EXPECT_TRUE(std::isnan(mn.getAsDouble(1)));
  EXPECT_EQ(mn.getAsDouble(2), 1.0);
}

TEST(ElementwiseBinary, IntegersAndErrors) {
  Tensor a = Tensor::fromVector(std::vector<int32_t>{7, -7, 9}, {3});
  Tensor b = Tensor::fromVector(std::vector<int32_t>{2, 2, -4}, {3});
  EXPECT_EQ(toDoubles(binary(BinaryKind::Add, a, b)),
            (std::vector<double>{9, -5, 5}));
  EXPECT_EQ(toDoubles(binary(BinaryKind::Div, a, b)),
            (std::vector<double>{3, -3, -2}));
  Tensor z = Tensor::fromVector(std::vector<int32_t>{1, 0, 1}, {3});
  expectError([&] { binary(BinaryKind::Div, a, z); },
              {"rtx.div", "division by zero", "element 1"});
  expectError(
      [&] {
        binary(BinaryKind::Add, Tensor({7, 13}, DType::F32),
               Tensor({13, 7}, DType::F32));
      },
      {"rtx.add", "[7, 13]", "[13, 7]"});
  expectError(
      [&] {
        binary(BinaryKind::Mul, Tensor({3}, DType::F32),
               Tensor({3}, DType::BF16));
      },
      {"rtx.mul", "bf16"});
}

TEST(ElementwiseCompare, EveryKindOnEveryDType) {
  std::vector<double> lhs = {1, 2, 3, -1, 0};
  std::vector<double> rhs = {1, 3, 2, -1, 5};
  struct Case {
    CompareKind kind;
    std::vector<double> expected;
  } cases[] = {
      {CompareKind::EQ, {1, 0, 0, 1, 0}}, {CompareKind::NE, {0, 1, 1, 0, 1}},
      {CompareKind::LT, {0, 1, 0, 0, 1}}, {CompareKind::LE, {1, 1, 0, 1, 1}},
      {CompareKind::GT, {0, 0, 1, 0, 0}}, {CompareKind::GE, {1, 0, 1, 1, 0}}};
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I32,
                  DType::I64}) {
    Tensor a(Shape{5}, d), b(Shape{5}, d);
    for (int i = 0; i < 5; ++i) {
      a.setFromDouble(i, lhs[i]);
      b.setFromDouble(i, rhs[i]);
    }
    for (const Case &c : cases) {
      Tensor m = compare(c.kind, a, b);
      EXPECT_EQ(m.dtype(), DType::I1);
      EXPECT_EQ(toDoubles(m), c.expected)
          << dtypeName(d) << " kind " << static_cast<int>(c.kind);
    }
  }
  // NaN is unequal to everything, itself included.
  Tensor n = Tensor::fromVector(std::vector<float>{NAN}, {1});
  EXPECT_EQ(compare(CompareKind::EQ, n, n).getAsDouble(0), 0.0);
  EXPECT_EQ(compare(CompareKind::NE, n, n).getAsDouble(0), 1.0);
  // i64 values beyond 2^53 compare exactly.
  Tensor big(Shape{1}, DType::I64), bigger(Shape{1}, DType::I64);
  big.data<int64_t>()[0] = (int64_t{1} << 60);
  bigger.data<int64_t>()[0] = (int64_t{1} << 60) + 1;
  EXPECT_EQ(compare(CompareKind::LT, big, bigger).getAsDouble(0), 1.0);
}

TEST(ElementwiseSelect, WhereAndMaskedFill) {
  Tensor cond =
      Tensor::fromVector(std::vector<int32_t>{1, 0, 0, 1, 1, 0}, {2, 3})
          .to(DType::I1);
  for (DType d :
       {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64}) {
    Tensor a = randomTensor({2, 3}, d, 21, -10, 10);
    Tensor b = randomTensor({2, 3}, d, 22, -10, 10);
    Tensor w = where(cond, a, b);
    std::vector<double> av = toDoubles(a), bv = toDoubles(b),
                        cv = toDoubles(cond);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(w.getAsDouble(i), cv[i] ? av[i] : bv[i]) << dtypeName(d);
  }
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    Tensor x = randomTensor({2, 3}, d, 23);
    Tensor y = maskedFill(x, cond, -INFINITY);
    for (int i = 0; i < 6; ++i) {
      if (cond.getAsDouble(i) != 0.0)
        EXPECT_EQ(y.getAsDouble(i), -INFINITY) << dtypeName(d);
      else
        EXPECT_EQ(y.getAsDouble(i), x.getAsDouble(i)) << dtypeName(d);
    }
  }
  // A masked score row through softmax: masked entries get probability 0.
  Tensor scores = randomTensor({2, 3}, DType::F32, 24);
  Tensor p = softmax(maskedFill(scores, cond, -INFINITY), 1);
  for (int i = 0; i < 6; ++i)
    if (cond.getAsDouble(i) != 0.0) {
      EXPECT_EQ(p.getAsDouble(i), 0.0);
    }
  expectError(
      [&] {
        where(Tensor({2, 3}, DType::F32), Tensor({2, 3}, DType::F32),
              Tensor({2, 3}, DType::F32));
      },
      {"rtx.where", "i1"});
  expectError(
      [&] {
        maskedFill(Tensor({2, 3}, DType::F32), Tensor({3}, DType::I1), 0);
      },
      {"rtx.masked_fill", "[3]"});
}

TEST(ElementwiseConvert, RoundTripsAndRounding) {
  // f32 -> bf16 -> f32 is the identity on values already in bf16.
  Tensor x = randomTensor({7, 13}, DType::BF16, 31).to(DType::F32);
  EXPECT_TRUE(sameBits(convert(convert(x, DType::BF16), DType::F32), x));
  // Rounding to nearest even on known bit patterns.
  std::vector<uint32_t> in = {0x3F808000u, 0x3F818000u, 0x3F808001u,
                              0x7F7FFFFFu};
  std::vector<uint16_t> expected = {0x3F80, 0x3F82, 0x3F81, 0x7F80};
  Tensor f(Shape{4}, DType::F32);
  std::memcpy(f.raw(), in.data(), 16);
  Tensor h = convert(f, DType::BF16);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(h.data<uint16_t>()[i], expected[i]) << i;
  // Float to integer truncates toward zero.
  Tensor v = Tensor::fromVector(std::vector<double>{2.7, -2.7, 0.2}, {3});
  EXPECT_EQ(toDoubles(convert(v, DType::I64)), (std::vector<double>{2, -2, 0}));
  EXPECT_EQ(toDoubles(convert(v, DType::I1)), (std::vector<double>{1, 1, 1}));
  Tensor f64 = randomTensor({65}, DType::F64, 32);
  EXPECT_TRUE(sameBits(convert(convert(f64, DType::F64), DType::F64), f64));
}

TEST(ElementwiseDropout, RateZeroIsIdentity) {
  Tensor x = randomTensor({7, 13}, DType::F32, 41);
  EXPECT_TRUE(sameBits(dropout(x, 0.0, 5), x));
}

TEST(ElementwiseDropout, KeepsOneMinusRateAndScales) {
  const double rate = 0.3;
  const int64_t n = 1000000;
  Tensor x = randomTensor({n}, DType::F32, 42, 1.0, 2.0);
  Tensor y = dropout(x, rate, 1234);
  const float *px = x.data<float>(), *py = y.data<float>();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (py[i] != 0.0f) {
      ++kept;
      ASSERT_FLOAT_EQ(py[i], px[i] * static_cast<float>(1.0 / (1.0 - rate)));
    }
  }
  // sd of the keep fraction is sqrt(0.21 / n) = 4.6e-4: allow 5 sd.
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - rate, 2.3e-3);
  // Another seed, another mask; the same seed, the same mask.
  EXPECT_FALSE(sameBits(dropout(x, rate, 1235), y));
  EXPECT_TRUE(sameBits(dropout(x, rate, 1234), y));
}

TEST(ElementwiseDropout, ShardMaskIsTheSliceOfTheWholeMask) {
  Tensor whole = randomTensor({13, 65}, DType::F32, 43, 1, 2);
  Tensor full = dropout(whole, 0.5, 99);
  // A [5, 20] shard at offset (7, 30).
  Tensor shard = slice(whole, {7, 30}, {12, 50});
  Tensor local = dropout(shard, 0.5, 99, {13, 65}, {7, 30});
  EXPECT_TRUE(sameBits(local, slice(full, {7, 30}, {12, 50})));
  // Without the offsets the shard would use the wrong counters.
  EXPECT_FALSE(sameBits(dropout(shard, 0.5, 99), local));
  expectError(
      [&] {
        dropout(shard, 0.5, 99, {13, 65}, {9, 30});
      },
      {"rtx.dropout", "[13, 65]"});
  expectError([&] { dropout(shard, 1.0, 99); }, {"rtx.dropout", "rate"});
}

TEST(ElementwiseDropout, BF16) {
  Tensor x = randomTensor({1000}, DType::BF16, 44, 1, 2);
  Tensor y = dropout(x, 0.5, 7);
  EXPECT_EQ(y.dtype(), DType::BF16);
  for (int64_t i = 0; i < 1000; ++i) {
    double v = y.getAsDouble(i);
    EXPECT_TRUE(v == 0.0 || v == 2.0 * x.getAsDouble(i));
  }
}

} // namespace
