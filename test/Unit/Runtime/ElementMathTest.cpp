//===- ElementMathTest.cpp - one element math on the CPU and the GPU ------===//
//
// The CPU kernels (librtxrt) and the GPU kernels run by the host emulation
// (librtxrt_gpu_emulation) both compute their element functions with
// runtime/lib/common/ElementMath.h, and both libraries are built with the
// same floating-point flags. So where the formulas are equal the results are
// equal bit for bit: every unary function and its derivative, every binary
// function, and the rows of softmax, its gradient and cross-entropy, in f32
// and f64, over inputs that include +-0, subnormals, large magnitudes,
// +-inf and NaN. (GEMMs are where the two devices differ: they are checked
// to tolerance in GpuKernelsTest.cpp.)
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "../../../runtime/lib/common/ElementMath.h"

#include "rtxrt/device/Gpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace rtxrt;

namespace {

Tensor dev(const Tensor &t) { return gpu::toDevice(t); }

/// Inputs for the element functions: signed zeros, subnormals, small and
/// large magnitudes (around the approximations' ranges too), the limits,
/// infinities, NaN, and a sweep over [-30, 30].
std::vector<double> specialInputs() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {
      0.0,   -0.0,   1e-40,  -1e-40, 1e-30,       -1e-30, 1e-8,  -1e-8, 0.5,
      -0.5,  0.625,  -0.625, 1.0,    -1.0,        3.0,    -3.0,  9.0,   -9.0,
      20.0,  -20.0,  44.0,   -44.0,  87.0,        -87.0,  87.5,  -87.5, 88.5,
      -88.5, 89.0,   -89.0,  104.0,  -104.0,      1e10,   -1e10, 3e38,  -3e38,
      1e300, -1e300, inf,    -inf,   std::nan("")};
  for (int i = 0; i <= 600; ++i)
    v.push_back(-30.0 + 0.1 * i + 1e-3 * (i % 7));
  return v;
}

Tensor tensorOf(const std::vector<double> &values, DType dtype) {
  Tensor t({static_cast<int64_t>(values.size())}, dtype);
  for (size_t i = 0; i < values.size(); ++i)
    t.setFromDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

/// Both hold the same values, bit for bit (any NaN equals any NaN).
void expectBitEqual(const Tensor &gpuResult, const Tensor &cpu,
                    const std::string &what) {
  ASSERT_TRUE(gpuResult.onGpu()) << what;
  Tensor gpuHost = gpu::toHost(gpuResult);
  ASSERT_EQ(gpuHost.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpuHost.dtype(), cpu.dtype()) << what;
  size_t size = dtypeSize(cpu.dtype());
  const auto *a = static_cast<const unsigned char *>(gpuHost.raw());
  const auto *b = static_cast<const unsigned char *>(cpu.raw());
  int reported = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double x = gpuHost.getAsDouble(i), y = cpu.getAsDouble(i);
    if (std::isnan(x) && std::isnan(y))
      continue;
    if (std::memcmp(a + i * size, b + i * size, size) != 0 && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << ": emulated GPU " << x
                    << " != CPU " << y;
  }
}

const char *dtypeLabel(DType dtype) { return dtypeName(dtype); }

class ElementMath : public ::testing::TestWithParam<DType> {};

TEST_P(ElementMath, EveryUnaryFunctionIsBitEqual) {
  DType dtype = GetParam();
  Tensor x = tensorOf(specialInputs(), dtype);
  for (int k = 0; k <= static_cast<int>(UnaryKind::GeluTanh); ++k) {
    auto kind = static_cast<UnaryKind>(k);
    expectBitEqual(gpu::unary(kind, dev(x)), unary(kind, x),
                   std::string("unary ") + std::to_string(k) + " " +
                       dtypeLabel(dtype));
  }
}

TEST_P(ElementMath, EveryDerivativeIsBitEqual) {
  DType dtype = GetParam();
  std::vector<double> inputs = specialInputs();
  // Upstream gradients: ones, then values of every sign and size, NaN too.
  std::vector<double> ones(inputs.size(), 1.0), mixed(inputs.size());
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  for (double &g : mixed)
    g = dist(gen);
  mixed[0] = 0.0;
  mixed[1] = -0.0;
  mixed[2] = std::numeric_limits<double>::infinity();
  mixed[3] = std::nan("");
  Tensor x = tensorOf(inputs, dtype);
  for (const std::vector<double> *g : {&ones, &mixed}) {
    Tensor dy = tensorOf(*g, dtype);
    for (int f = 0; f <= static_cast<int>(UnaryFn::GeluTanh); ++f) {
      auto fn = static_cast<UnaryFn>(f);
      expectBitEqual(gpu::unaryGrad(fn, dev(x), dev(dy)), unaryGrad(fn, x, dy),
                     std::string("unary_grad ") + std::to_string(f) + " " +
                         dtypeLabel(dtype));
    }
  }
}

TEST_P(ElementMath, EveryBinaryFunctionIsBitEqual) {
  DType dtype = GetParam();
  std::vector<double> a = specialInputs(), b = a;
  std::reverse(b.begin(), b.end());
  Tensor ta = tensorOf(a, dtype), tb = tensorOf(b, dtype);
  for (int k = 0; k <= static_cast<int>(BinaryKind::Minimum); ++k) {
    auto kind = static_cast<BinaryKind>(k);
    expectBitEqual(gpu::binary(kind, dev(ta), dev(tb)), binary(kind, ta, tb),
                   std::string("binary ") + std::to_string(k) + " " +
                       dtypeLabel(dtype));
  }
}

TEST_P(ElementMath, SoftmaxRowsAndTheirGradientAreBitEqual) {
  DType dtype = GetParam();
  // Rows of 37 (a tail after the 8 lanes) and 1100 (more than one
  // cross-entropy chunk of 512), with special rows: a -inf (a masked
  // score), a +inf, a NaN, all -inf.
  for (int64_t n : {37, 1100}) {
    Tensor x = test::randomTensor({6, n}, dtype, 40 + n, -20, 20);
    const double inf = std::numeric_limits<double>::infinity();
    x.setFromDouble(1 * n + 3, -inf);
    x.setFromDouble(2 * n + 5, inf);
    x.setFromDouble(3 * n + 7, std::nan(""));
    for (int64_t i = 0; i < n; ++i)
      x.setFromDouble(4 * n + i, -inf);
    std::string what =
        std::string(dtypeLabel(dtype)) + " n=" + std::to_string(n);
    for (int64_t dim : {0, 1}) {
      Tensor y = softmax(x, dim);
      expectBitEqual(gpu::softmax(dev(x), dim), y, "softmax " + what);
      Tensor dy = test::randomTensor({6, n}, dtype, 50 + n);
      expectBitEqual(gpu::softmaxGrad(dev(y), dev(dy), dim),
                     softmaxGrad(y, dy, dim), "softmax_grad " + what);
    }
    // Cross-entropy on the finite rows.
    Tensor logits = test::randomTensor({3, n}, dtype, 60 + n, -20, 20);
    Tensor labels({3}, DType::I32);
    for (int64_t t = 0; t < 3; ++t)
      labels.setFromDouble(t, static_cast<double>((t * 17) % n));
    expectBitEqual(gpu::crossEntropy(dev(logits), dev(labels), false, 0),
                   crossEntropy(logits, labels, false, 0),
                   "cross_entropy " + what);
    Tensor dloss = Tensor::scalar(0.7, dtype);
    expectBitEqual(
        gpu::crossEntropyGrad(dev(logits), dev(labels), dev(dloss), false, 0),
        crossEntropyGrad(logits, labels, dloss, false, 0),
        "cross_entropy_grad " + what);
    // A vocabulary shard at offset 5 of n + 9 classes.
    std::vector<Tensor> gs =
        gpu::vocabLogitStats(dev(logits), dev(labels), 5, n + 9, false, 0);
    std::vector<Tensor> cs =
        vocabLogitStats(logits, labels, 5, n + 9, false, 0);
    for (size_t i = 0; i < cs.size(); ++i)
      expectBitEqual(gs[i], cs[i], "vocab_logit_stats " + what);
    Tensor sumExp = test::randomTensor({3}, dtype, 70 + n, 1.0, 50.0);
    expectBitEqual(gpu::vocabCrossEntropyGrad(dev(logits), dev(labels),
                                              dev(dloss), dev(cs[0]),
                                              dev(sumExp), 5, n + 9, false, 0),
                   vocabCrossEntropyGrad(logits, labels, dloss, cs[0], sumExp,
                                         5, n + 9, false, 0),
                   "vocab_cross_entropy_grad " + what);
  }
}

INSTANTIATE_TEST_SUITE_P(F32AndF64, ElementMath,
                         ::testing::Values(DType::F32, DType::F64),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(dtypeName(info.param));
                         });

// The policy itself, on values whose results do not depend on FMA: the
// approximations where ElementMath.h says so, libm elsewhere.
TEST(ElementMathPolicy, ApproximationsOnlyWhereThePolicySays) {
  using namespace rtxrt::math;
  EXPECT_EQ(rowExp(0.0f), 1.0f);
  EXPECT_EQ(rowExp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(rowExp(-100.0f), 0.0f);            // expApprox flushes below -87.3
  EXPECT_EQ(rowExp(-100.0), std::exp(-100.0)); // f64 is libm's
  EXPECT_EQ(rowExp(1.5), std::exp(1.5));
  EXPECT_GT(Exp::value(-100.0f), 0.0f); // rtx.exp keeps libm's subnormal
  EXPECT_EQ(Exp::value(88.5f), std::exp(88.5f)); // finite; expApprox: inf
  EXPECT_EQ(expApprox(88.5f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Tanh::value(0.3f), std::tanh(0.3f));
  EXPECT_EQ(GeluTanh::value(0.0f), 0.0f);
  EXPECT_EQ(GeluTanh::value(-0.0f), -0.0f);
  EXPECT_EQ(GeluTanh::value(30.0f), 30.0f);
  EXPECT_EQ(GeluTanh::value(-30.0f), -0.0f);
}

TEST(ElementMathPolicy, NaNStaysNaN) {
  using namespace rtxrt::math;
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(expApprox(nan)));
  EXPECT_TRUE(std::isnan(tanhApprox(nan)));
  EXPECT_TRUE(std::isnan(Relu::value(nan)));
  EXPECT_TRUE(std::isnan(Relu::grad(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(Relu::value(std::nan(""))));
  EXPECT_EQ(Relu::value(-0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(Maximum::value(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(Maximum::value(1.0f, nan)));
  EXPECT_TRUE(std::isnan(Minimum::value(1.0f, nan)));
  for (int k = 0; k <= static_cast<int>(UnaryKind::GeluTanh); ++k)
    EXPECT_TRUE(std::isnan(unaryValue(static_cast<UnaryKind>(k), nan)))
        << "unary " << k;
  for (int f = 0; f <= static_cast<int>(UnaryFn::GeluTanh); ++f)
    EXPECT_TRUE(std::isnan(unaryGradValue(static_cast<UnaryFn>(f), nan, 1.0f)))
        << "unary_grad " << f;
}

} // namespace
