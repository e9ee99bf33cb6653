//===- ElementwiseFastTest.cpp - fast elementwise kernels vs portable -----===//
//
// rtx.unary, rtx.binary, rtx.unary_grad, rtx.swiglu and rtx.convert
// (runtime/lib/gpu/fast/ElementwiseFast.cu) against the portable bodies
// (Elementwise.cu) on the same device inputs, in f32, bf16 and f16. Sizes
// cover a single element, fewer than one pack of 8, packs with a tail, and
// a million elements plus a tail (the grid-stride loop). Without a GPU
// every test says SKIPPED.
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#include <cmath>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};
const int64_t kSizes[] = {1, 7, 8, 37, 769, (int64_t{1} << 20) + 3};

Tensor dev(const Tensor &t) { return gpu::toDevice(t); }

/// `host`'s values on the device at an offset of one element into a buffer,
/// so that the view's base is not 16-byte aligned: the fast kernels then read
/// it one element at a time.
Tensor unalignedOnDevice(const Tensor &host) {
  Tensor padded({host.numel() + 1}, host.dtype());
  for (int64_t i = 0; i < host.numel(); ++i)
    padded.setFromDouble(i + 1, host.getAsDouble(i));
  Tensor device = gpu::toDevice(padded);
  std::shared_ptr<unsigned char> shifted(
      device.buffer(), device.buffer().get() + dtypeSize(host.dtype()));
  return Tensor::wrap(host.shape(), host.dtype(), shifted, Device::Gpu);
}

std::string caseName(DType dtype, int64_t n) {
  return std::string(dtypeName(dtype)) + " n=" + std::to_string(n);
}

/// Functions defined for negative inputs too (log, sqrt and rsqrt are not).
bool takesNegatives(UnaryKind kind) {
  return kind != UnaryKind::Log && kind != UnaryKind::Sqrt &&
         kind != UnaryKind::Rsqrt;
}
bool takesNegatives(UnaryFn fn) {
  return fn != UnaryFn::Log && fn != UnaryFn::Sqrt && fn != UnaryFn::Rsqrt;
}

} // namespace

TEST(ElementwiseFastTest, UnaryFunctions) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (int64_t n : kSizes) {
      Tensor positive = dev(randomTensor({n}, dtype, 1, 0.1, 3.0));
      Tensor signed_ = dev(randomTensor({n}, dtype, 2, -4.0, 4.0));
      for (int k = 0; k <= static_cast<int>(UnaryKind::GeluTanh); ++k) {
        auto kind = static_cast<UnaryKind>(k);
        const Tensor &x = takesNegatives(kind) ? signed_ : positive;
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::unary(kind, x)}; },
            tolerance(dtype),
            "unary " + std::to_string(k) + " " + caseName(dtype, n));
      }
    }
}

TEST(ElementwiseFastTest, BinaryFunctionsAndSwiGLU) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (int64_t n : kSizes) {
      Tensor a = dev(randomTensor({n}, dtype, 3, -4.0, 4.0));
      // Away from zero, so that division stays finite.
      Tensor b = dev(randomTensor({n}, dtype, 4, 0.25, 4.0));
      for (int k = 0; k <= static_cast<int>(BinaryKind::Minimum); ++k) {
        auto kind = static_cast<BinaryKind>(k);
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::binary(kind, a, b)}; },
            tolerance(dtype),
            "binary " + std::to_string(k) + " " + caseName(dtype, n));
      }
      expectFastMatchesPortable(
          [&] { return std::vector<Tensor>{gpu::swiglu(a, b)}; },
          tolerance(dtype), "swiglu " + caseName(dtype, n));
    }
}

TEST(ElementwiseFastTest, UnaryGradients) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (int64_t n : kSizes) {
      Tensor positive = dev(randomTensor({n}, dtype, 5, 0.1, 3.0));
      Tensor signed_ = dev(randomTensor({n}, dtype, 6, -4.0, 4.0));
      Tensor dy = dev(randomTensor({n}, dtype, 7));
      for (int f = 0; f <= static_cast<int>(UnaryFn::GeluTanh); ++f) {
        auto fn = static_cast<UnaryFn>(f);
        const Tensor &x = takesNegatives(fn) ? signed_ : positive;
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::unaryGrad(fn, x, dy)}; },
            dtype == DType::F32 ? 1e-4 : tolerance(dtype),
            "unary_grad " + std::to_string(f) + " " + caseName(dtype, n));
      }
    }
}

TEST(ElementwiseFastTest, ConvertIsExactBetweenFloatTypes) {
  RTX_REQUIRE_GPU();
  // Rounding to nearest even has one answer: the two paths give the same
  // values, overflow to inf (f16 beyond 65504) and NaN included.
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes)
      for (int64_t n : kSizes) {
        Tensor host = randomTensor({n}, from, 8, -1e5, 1e5);
        host.setFromDouble(0, NAN);
        Tensor x = dev(host);
        auto [portable, fast] = runBothPaths(
            [&] { return std::vector<Tensor>{gpu::convert(x, to)}; });
        ASSERT_EQ(fast[0].dtype(), to);
        std::vector<double> a = toDoubles(fast[0]), b = toDoubles(portable[0]);
        int64_t different = 0;
        for (size_t i = 0; i < a.size(); ++i)
          different +=
              !(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])));
        EXPECT_EQ(different, 0) << "convert " << dtypeName(from) << " to "
                                << dtypeName(to) << " n=" << n;
        EXPECT_TRUE(std::isnan(a[0])) << "NaN stays NaN";
      }
}

TEST(ElementwiseFastTest, F64AndIntegersRunThePortableBodies) {
  RTX_REQUIRE_GPU();
  Tensor x = dev(randomTensor({37}, DType::F64, 9, 0.1, 2.0));
  expectFastMatchesPortable(
      [&] {
        return std::vector<Tensor>{gpu::unary(UnaryKind::Gelu, x),
                                   gpu::binary(BinaryKind::Mul, x, x),
                                   gpu::convert(x, DType::BF16)};
      },
      0.0, "f64");
}

TEST(ElementwiseFastTest, UnalignedViewsAreReadElementByElement) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes) {
    Tensor a = unalignedOnDevice(randomTensor({769}, dtype, 11, -4.0, 4.0));
    Tensor b = dev(randomTensor({769}, dtype, 12, 0.25, 4.0));
    expectFastMatchesPortable(
        [&] {
          return std::vector<Tensor>{gpu::unary(UnaryKind::GeluTanh, a),
                                     gpu::binary(BinaryKind::Mul, a, b),
                                     gpu::unaryGrad(UnaryFn::Silu, a, b),
                                     gpu::convert(a, DType::F32)};
        },
        tolerance(dtype), std::string("unaligned ") + dtypeName(dtype));
  }
}
