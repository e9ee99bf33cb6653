//===- GradientTest.cpp - unary_grad, softmax_grad, rope_grad, pad --------===//
//
// Each backward kernel against central finite differences of its forward
// kernel in f64 (see GradCheck.h), and in f32 against itself in f64.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// The forward op whose derivative unary_grad `fn` applies.
UnaryKind forwardKind(UnaryFn fn) {
  switch (fn) {
  case UnaryFn::Exp:
    return UnaryKind::Exp;
  case UnaryFn::Log:
    return UnaryKind::Log;
  case UnaryFn::Sqrt:
    return UnaryKind::Sqrt;
  case UnaryFn::Rsqrt:
    return UnaryKind::Rsqrt;
  case UnaryFn::Tanh:
    return UnaryKind::Tanh;
  case UnaryFn::Sigmoid:
    return UnaryKind::Sigmoid;
  case UnaryFn::Relu:
    return UnaryKind::Relu;
  case UnaryFn::Silu:
    return UnaryKind::Silu;
  case UnaryFn::Gelu:
    return UnaryKind::Gelu;
  case UnaryFn::GeluTanh:
    return UnaryKind::GeluTanh;
  }
  return UnaryKind::Neg;
}

const char *fnName(UnaryFn fn) {
  const char *names[] = {"Exp",     "Log",  "Sqrt", "Rsqrt", "Tanh",
                         "Sigmoid", "Relu", "Silu", "Gelu",  "GeluTanh"};
  return names[static_cast<int>(fn)];
}

/// Inputs inside the function's domain: log, sqrt and rsqrt need x > 0.
Tensor unaryInput(UnaryFn fn, DType dtype, unsigned seed) {
  bool positive =
      fn == UnaryFn::Log || fn == UnaryFn::Sqrt || fn == UnaryFn::Rsqrt;
  return randomTensor({7, 13}, dtype, seed, positive ? 0.3 : -3.0, 3.0);
}

class UnaryGradTest : public testing::TestWithParam<UnaryFn> {};

TEST_P(UnaryGradTest, MatchesFiniteDifferences) {
  UnaryFn fn = GetParam();
  Tensor x = unaryInput(fn, DType::F64, 1);
  Tensor r = randomTensor(x.shape(), DType::F64, 2);
  std::vector<double> numeric = numericGrad(
      [&](const Tensor &xp) { return unary(forwardKind(fn), xp); }, x, r);
  expectClose(unaryGrad(fn, x, r), x.shape(), numeric, kGradTolerance);
}

TEST_P(UnaryGradTest, F32AndBF16MatchF64) {
  UnaryFn fn = GetParam();
  // Inputs representable in bf16, so all three see the same values.
  Tensor x = unaryInput(fn, DType::BF16, 3);
  Tensor r = randomTensor(x.shape(), DType::BF16, 4);
  Tensor ref = unaryGrad(fn, x.to(DType::F64), r.to(DType::F64));
  expectF32MatchesF64(unaryGrad(fn, x.to(DType::F32), r.to(DType::F32)), ref);
  Tensor bf = unaryGrad(fn, x, r);
  EXPECT_EQ(bf.dtype(), DType::BF16);
  expectClose(bf, x.shape(), toDoubles(ref), tolerance(DType::BF16));
}

INSTANTIATE_TEST_SUITE_P(EveryFn, UnaryGradTest,
                         testing::Values(UnaryFn::Exp, UnaryFn::Log,
                                         UnaryFn::Sqrt, UnaryFn::Rsqrt,
                                         UnaryFn::Tanh, UnaryFn::Sigmoid,
                                         UnaryFn::Relu, UnaryFn::Silu,
                                         UnaryFn::Gelu, UnaryFn::GeluTanh),
                         [](const testing::TestParamInfo<UnaryFn> &info) {
                           return std::string(fnName(info.param));
                         });

TEST(UnaryGrad, KnownValuesAndEdgeCases) {
  Tensor x = Tensor::fromVector(std::vector<double>{-2.0, 0.0, 0.0, 1.0}, {4});
  Tensor dy = Tensor::fromVector(std::vector<double>{3.0, 5.0, 1.0, 7.0}, {4});
  // relu' is 0 at 0 (PyTorch's convention) and below, 1 above.
  EXPECT_EQ(toDoubles(unaryGrad(UnaryFn::Relu, x, dy)),
            (std::vector<double>{0.0, 0.0, 0.0, 7.0}));
  // gelu'(0) = 1/2 for both forms; sigmoid'(0) = 1/4; tanh'(0) = 1.
  for (UnaryFn fn : {UnaryFn::Gelu, UnaryFn::GeluTanh})
    EXPECT_DOUBLE_EQ(unaryGrad(fn, x, dy).getAsDouble(1), 2.5);
  EXPECT_DOUBLE_EQ(unaryGrad(UnaryFn::Sigmoid, x, dy).getAsDouble(1), 1.25);
  EXPECT_DOUBLE_EQ(unaryGrad(UnaryFn::Tanh, x, dy).getAsDouble(2), 1.0);
  // exp'(1) = e, log'(1) = 1, rsqrt'(1) = -1/2.
  EXPECT_DOUBLE_EQ(unaryGrad(UnaryFn::Exp, x, dy).getAsDouble(3), 7 * M_E);
  EXPECT_DOUBLE_EQ(unaryGrad(UnaryFn::Log, x, dy).getAsDouble(3), 7.0);
  EXPECT_DOUBLE_EQ(unaryGrad(UnaryFn::Rsqrt, x, dy).getAsDouble(3), -3.5);
  // Saturated sigmoid/silu stay finite in f32.
  Tensor big = Tensor::fromVector(std::vector<float>{-200.f, 200.f}, {2});
  Tensor ones = Tensor::fromVector(std::vector<float>{1.f, 1.f}, {2});
  for (UnaryFn fn : {UnaryFn::Sigmoid, UnaryFn::Silu, UnaryFn::Tanh}) {
    std::vector<double> g = toDoubles(unaryGrad(fn, big, ones));
    EXPECT_TRUE(std::isfinite(g[0]) && std::isfinite(g[1])) << fnName(fn);
  }
  // NaN is never hidden: a NaN input gives a NaN gradient.
  Tensor nan = Tensor::fromVector(std::vector<double>{NAN}, {1});
  Tensor one = Tensor::fromVector(std::vector<double>{1.0}, {1});
  EXPECT_TRUE(std::isnan(unaryGrad(UnaryFn::Relu, nan, one).getAsDouble(0)));
}

TEST(UnaryGrad, ErrorsNameOpAndOperands) {
  Tensor x({7, 13}, DType::F32);
  expectError(
      [&] {
        unaryGrad(UnaryFn::Silu, x, Tensor({7, 12}, DType::F32));
      },
      {"rtx.unary_grad silu", "[7, 13]", "[7, 12]"});
  expectError(
      [&] {
        unaryGrad(UnaryFn::Exp, x, Tensor({7, 13}, DType::F64));
      },
      {"rtx.unary_grad exp", "f32", "f64"});
  expectError(
      [&] {
        unaryGrad(UnaryFn::Exp, x, Tensor({7, 13}, DType::I32));
      },
      {"result_grad", "float"});
}

TEST(SoftmaxGrad, MatchesFiniteDifferencesAlongEveryDim) {
  Shape s = {3, 7, 5};
  Tensor x = randomTensor(s, DType::F64, 5, -3, 3);
  Tensor r = randomTensor(s, DType::F64, 6);
  for (int64_t dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    std::vector<double> numeric =
        numericGrad([&](const Tensor &xp) { return softmax(xp, dim); }, x, r);
    Tensor y = softmax(x, dim);
    expectClose(softmaxGrad(y, r, dim), s, numeric, kGradTolerance);
    // f32: the same op from the f32 forward output.
    Tensor x32 = x.to(DType::F32), r32 = r.to(DType::F32);
    expectF32MatchesF64(
        softmaxGrad(softmax(x32, dim), r32, dim),
        softmaxGrad(softmax(x32.to(DType::F64), dim), r32.to(DType::F64), dim));
  }
}

TEST(SoftmaxGrad, Errors) {
  Tensor y({7, 13}, DType::F32);
  expectError([&] { softmaxGrad(y, y, 2); }, {"rtx.softmax_grad", "2"});
  expectError(
      [&] {
        softmaxGrad(y, Tensor({13, 7}, DType::F32), 1);
      },
      {"rtx.softmax_grad", "[13, 7]"});
}

TEST(RopeGrad, MatchesFiniteDifferences) {
  // Odd batch, heads and positions; an offset as in decoding.
  Shape s = {3, 5, 7, 6};
  Tensor x = randomTensor(s, DType::F64, 7);
  Tensor r = randomTensor(s, DType::F64, 8);
  for (auto [thetaValue, offsetValue] :
       {std::pair<double, int64_t>{10000.0, 0}, {500.0, 13}}) {
    // Plain copies: clang 14 cannot capture structured bindings in lambdas.
    double theta = thetaValue;
    int64_t offset = offsetValue;
    SCOPED_TRACE(offset);
    std::vector<double> numeric = numericGrad(
        [&](const Tensor &xp) { return rope(xp, theta, offset); }, x, r);
    Tensor dx = ropeGrad(r, theta, offset);
    expectClose(dx, s, numeric, kGradTolerance);
    expectF32MatchesF64(
        ropeGrad(r.to(DType::F32), theta, offset),
        ropeGrad(r.to(DType::F32).to(DType::F64), theta, offset));
    // A rotation's transpose is its inverse.
    expectClose(ropeGrad(rope(x, theta, offset), theta, offset), s,
                toDoubles(x), 1e-14);
  }
}

TEST(RopeGrad, Errors) {
  expectError(
      [&] {
        ropeGrad(Tensor({1, 2, 3, 5}, DType::F32), 1e4, 0);
      },
      {"rtx.rope_grad", "D=5"});
  expectError(
      [&] {
        ropeGrad(Tensor({7, 13}, DType::F32), 1e4, 0);
      },
      {"rtx.rope_grad", "result_grad", "[7, 13]"});
  expectError(
      [&] {
        ropeGrad(Tensor({1, 1, 2, 4}, DType::F32), 0.0, 0);
      },
      {"rtx.rope_grad", "theta"});
}

TEST(Pad, IsTheGradientOfSlice) {
  Shape s = {5, 7, 3};
  std::vector<int64_t> starts = {1, 0, 2}, limits = {4, 7, 3};
  Tensor x = randomTensor(s, DType::F64, 9);
  Tensor r = randomTensor({3, 7, 1}, DType::F64, 10);
  std::vector<double> numeric = numericGrad(
      [&](const Tensor &xp) { return slice(xp, starts, limits); }, x, r);
  std::vector<int64_t> high = {5 - 4, 7 - 7, 3 - 3};
  // slice is linear: the differences are exact up to rounding.
  expectClose(pad(r, starts, high), s, numeric, 1e-9);
  EXPECT_TRUE(sameBits(slice(pad(r, starts, high), starts, limits), r));
}

TEST(Pad, AnyDTypeAndEdgeCases) {
  // i32 [2, 3] -> [3, 7] with low (1, 2), high (0, 2).
  Tensor x = Tensor::fromVector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor p = pad(x, {1, 2}, {0, 2});
  ASSERT_EQ(p.shape(), (Shape{3, 7}));
  EXPECT_EQ(p.dtype(), DType::I32);
  std::vector<double> expected = {0, 0, 0, 0, 0, 0, 0, //
                                  0, 0, 1, 2, 3, 0, 0, //
                                  0, 0, 4, 5, 6, 0, 0};
  EXPECT_EQ(toDoubles(p), expected);
  // bf16 keeps its bits; rank 0 and empty inputs.
  Tensor b = randomTensor({2, 3}, DType::BF16, 11);
  Tensor pb = pad(b, {0, 1}, {1, 0});
  EXPECT_TRUE(sameBits(slice(pb, {0, 1}, {2, 4}), b));
  EXPECT_EQ(pad(Tensor::scalar(2.5), {}, {}).getAsDouble(0), 2.5);
  Tensor empty = pad(Tensor({0, 3}, DType::F32), {1, 0}, {1, 2});
  EXPECT_EQ(empty.shape(), (Shape{2, 5}));
  EXPECT_EQ(toDoubles(empty), std::vector<double>(10, 0.0));
  expectError(
      [&] {
        pad(x, {0, -1}, {0, 0});
      },
      {"rtx.pad", "dimension 1", "non-negative"});
  expectError([&] { pad(x, {0}, {0, 0}); }, {"rtx.pad", "[2, 3]"});
  expectError(
      [&] {
        pad(x, {0, INT64_MAX - 1}, {0, 0});
      },
      {"rtx.pad", "dimension 1", "overflows"});
}

} // namespace
