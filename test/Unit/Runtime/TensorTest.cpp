//===- TensorTest.cpp - Tensor, dtype helpers, bf16/f16 rounding ----------===//

#include "TestUtil.h"

#include <cstring>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(TensorTest, ZeroFilledWithShapeAndDType) {
  Tensor t({7, 13}, DType::F32);
  EXPECT_EQ(t.numel(), 91);
  EXPECT_EQ(t.nbytes(), 91u * 4);
  EXPECT_EQ(t.rank(), 2);
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_EQ(t.data<float>()[i], 0.0f);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_STREQ(dtypeName(DType::I64), "i64");
  EXPECT_EQ(shapeToString({4, 8}), "[4, 8]");
  EXPECT_EQ(numElements({}), 1);
}

/// The message of the Error that `make` throws ("" when it throws none).
template <typename F> std::string errorOf(F make) {
  try {
    make();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// 2^32 x 2^32 elements wrap to 0 in int64 arithmetic: without the check the
// tensor would be "empty" and a kernel would compute on nothing (or, with
// 2^32 x 2^31 + 1, index far past a small buffer).
TEST(TensorTest, RefusesShapesWhoseSizeOverflows) {
  const int64_t big = int64_t{1} << 32;
  std::string count = errorOf([&] { Tensor t({big, big}, DType::F32); });
  EXPECT_NE(count.find("[4294967296, 4294967296]"), std::string::npos) << count;
  EXPECT_NE(count.find("more elements than int64 can count"), std::string::npos)
      << count;
  EXPECT_NE(errorOf([&] {
              Tensor::uninitialized({big, big, 3}, DType::I1);
            }).find("[4294967296, 4294967296, 3]"),
            std::string::npos);
  EXPECT_THROW(numElements({big, big}), Error);
  // 2^62 elements fit; their 2^64 f32 bytes do not.
  std::string bytes =
      errorOf([&] { Tensor::uninitialized({int64_t{1} << 62}, DType::F32); });
  EXPECT_NE(bytes.find("a f32 tensor of shape [4611686018427387904] has more "
                       "bytes than int64 can count"),
            std::string::npos)
      << bytes;
  EXPECT_NE(errorOf([&] {
              Tensor::wrap({big, big}, DType::F32,
                           std::make_shared<unsigned char>(0), Device::Host);
            }).find("[4294967296, 4294967296]"),
            std::string::npos);
  // A zero dimension makes any shape empty, however large the others.
  EXPECT_EQ(numElements({0, big, big}), 0);
  EXPECT_EQ(Tensor({big, 0, big}, DType::F32).nbytes(), 0u);
  EXPECT_EQ(tensorBytes({3, 5}, DType::BF16), 30);
}

TEST(TensorTest, CopiesShareCloneCopies) {
  Tensor a = Tensor::fromVector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor view = a;
  Tensor copy = a.clone();
  a.data<float>()[0] = 9;
  EXPECT_EQ(view.data<float>()[0], 9);
  EXPECT_EQ(copy.data<float>()[0], 1);
  Tensor flat = a.reshaped({4});
  EXPECT_EQ(flat.raw(), a.raw());
  EXPECT_THROW(a.reshaped({3}), Error);
}

TEST(TensorTest, TypedAccessChecksDType) {
  Tensor t({3}, DType::I32);
  EXPECT_NO_THROW(t.data<int32_t>());
  EXPECT_THROW(t.data<float>(), Error);
  EXPECT_THROW(t.data<int64_t>(), Error);
  EXPECT_THROW(Tensor({-1}, DType::F32), Error);
  EXPECT_THROW(Tensor::fromVector(std::vector<float>{1, 2}, {3}), Error);
  EXPECT_THROW(t.getAsDouble(3), Error);
}

TEST(TensorTest, GetSetAsDouble) {
  Tensor t({5}, DType::I32);
  t.setFromDouble(0, 2.9);
  t.setFromDouble(1, -2.9);
  t.setFromDouble(2, 1e20); // saturates
  t.setFromDouble(3, NAN);  // 0, not undefined behaviour
  EXPECT_EQ(t.data<int32_t>()[0], 2);
  EXPECT_EQ(t.data<int32_t>()[1], -2);
  EXPECT_EQ(t.data<int32_t>()[2], 2147483647);
  EXPECT_EQ(t.data<int32_t>()[3], 0);
  Tensor s = Tensor::scalar(0.5, DType::F64);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.getAsDouble(0), 0.5);
}

TEST(TensorTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBF16(-2.0f), 0xC000);
  // Halfway cases go to the even neighbour.
  EXPECT_EQ(floatToBF16(fromBits(0x3F808000)), 0x3F80); // 1 + 2^-8: down
  EXPECT_EQ(floatToBF16(fromBits(0x3F818000)), 0x3F82); // up to even
  EXPECT_EQ(floatToBF16(fromBits(0x3F808001)), 0x3F81); // above half: up
  EXPECT_EQ(floatToBF16(fromBits(0x3F807FFF)), 0x3F80); // below half: down
  // Overflow rounds to infinity; infinities and NaN survive.
  EXPECT_EQ(floatToBF16(fromBits(0x7F7FFFFF)), 0x7F80);
  EXPECT_EQ(floatToBF16(INFINITY), 0x7F80);
  EXPECT_EQ(floatToBF16(-INFINITY), 0xFF80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  // A NaN whose payload lies only in the dropped bits stays NaN.
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(fromBits(0x7F800001)))));
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
}

TEST(TensorTest, F16RoundsToNearestEven) {
  EXPECT_EQ(floatToF16(1.0f), 0x3C00);
  EXPECT_EQ(floatToF16(-2.0f), 0xC000);
  EXPECT_EQ(floatToF16(0.1f), 0x2E66);
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);              // largest finite
  EXPECT_EQ(floatToF16(65519.996f), 0x7BFF);            // just below the tie
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);              // tie rounds to inf
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000); // tie to even: 0
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -26)), 0x0001); // 1.5 ulp/2: up
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp: tie, even
  EXPECT_EQ(floatToF16(std::ldexp(5.0f, -25)), 0x0002); // 2.5 ulp: tie, even
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00); // tie: even
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(3.0f, -11)), 0x3C02); // tie: even
  EXPECT_EQ(floatToF16(-INFINITY), 0xFC00);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x7BFF), 65504.0f);
}

TEST(TensorTest, Every16BitPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t b = static_cast<uint16_t>(bits);
    float bf = bf16ToFloat(b), h = f16ToFloat(b);
    if (!std::isnan(bf)) {
      EXPECT_EQ(floatToBF16(bf), b) << std::hex << bits;
    }
    if (!std::isnan(h)) {
      EXPECT_EQ(floatToF16(h), b) << std::hex << bits;
    }
  }
}

TEST(TensorTest, F16MatchesCompilerConversion) {
#ifdef __FLT16_MAX__
  // The compiler's _Float16 conversion is an independent, correctly rounded
  // reference.
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bitsDist;
  for (int i = 0; i < 200000; ++i) {
    float f = fromBits(bitsDist(gen));
    // Restrict to the interesting range: around and below f16's span.
    int exponent;
    float mantissa = std::frexp(f, &exponent);
    f = std::ldexp(mantissa, static_cast<int>(bitsDist(gen) % 48) - 30);
    if (std::isnan(f))
      continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, 2);
    ASSERT_EQ(floatToF16(f), expected) << f;
  }
#else
  GTEST_SKIP() << "compiler has no _Float16";
#endif
}

TEST(TensorTest, ToConvertsEveryPair) {
  Tensor f =
      Tensor::fromVector(std::vector<float>{1.5f, -2.75f, 0.0f, 3.0f}, {2, 2});
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    Tensor back = f.to(d).to(DType::F32);
    EXPECT_TRUE(sameBits(back, f)) << dtypeName(d);
  }
  Tensor i = f.to(DType::I32);
  EXPECT_EQ(toDoubles(i), (std::vector<double>{1, -2, 0, 3}));
  Tensor m = f.to(DType::I1);
  EXPECT_EQ(toDoubles(m), (std::vector<double>{1, 1, 0, 1}));
  Tensor big = Tensor::fromVector(std::vector<int32_t>{16777217, -5}, {2});
  EXPECT_EQ(big.to(DType::I64).data<int64_t>()[0], 16777217);
  EXPECT_EQ(big.to(DType::F64).data<double>()[0], 16777217.0);
}

} // namespace
