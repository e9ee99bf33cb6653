//===- RowsFastTest.cpp - fast row kernels against the portable ones ------===//
//
// layernorm, rmsnorm, their gradients, softmax, its gradient, cross-entropy
// and its gradient (runtime/lib/gpu/fast/RowsFast.cu) against the portable
// bodies (Rows.cu) on the same device inputs, in f32, bf16 and f16. The
// shapes cross both row layouts (a warp per row up to 1024 columns, a block
// beyond), packed and element-wise loads (widths that are and are not
// multiples of 8), one row, a few rows and 4096 rows; the values include
// large means (layernorm), large logits (softmax and cross-entropy
// stability), -inf entries and whole -inf rows (softmax), and ignored
// labels. Without a GPU every test says SKIPPED.
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};

/// [rows, d] cases. 4096 rows go with widths up to 768 only, and the
/// vocabulary width (50304) with a few rows, to keep each test to seconds.
/// 1030 columns: a block per row whose rows start off a 16-byte boundary;
/// 1000 rows: the column sums' last chunk of rows is partial.
struct RowCase {
  int64_t rows, d;
};
const RowCase kRowCases[] = {{1, 1},     {1, 7},     {3, 7},      {3, 37},
                             {4096, 7},  {3, 768},   {4096, 768}, {1, 769},
                             {3, 769},   {5, 1030},  {1, 3072},   {3, 3072},
                             {4096, 37}, {1000, 37}, {3, 50304}};

std::string caseName(const RowCase &c, DType dtype) {
  return std::string(dtypeName(dtype)) + " [" + std::to_string(c.rows) + ", " +
         std::to_string(c.d) + "]";
}

/// Gradients compare at design.md's gradient tolerance in f32; in bf16/f16
/// both paths round the same f32 values, so the dtype's own tolerance.
double gradTolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-4 : tolerance(dtype);
}

/// Like expectFastMatchesPortable, but NaN is allowed where both paths give
/// NaN (a softmax row of only -inf is NaN, as in PyTorch): the NaN positions
/// must be the same and the other elements within `tol`.
void expectFastMatchesPortableWithNaN(
    const std::function<std::vector<Tensor>()> &op, double tol,
    const std::string &what) {
  auto [portable, fast] = runBothPaths(op);
  ASSERT_EQ(portable.size(), fast.size()) << what;
  for (size_t r = 0; r < fast.size(); ++r) {
    ASSERT_EQ(fast[r].shape(), portable[r].shape()) << what;
    std::vector<double> a = toDoubles(fast[r]), b = toDoubles(portable[r]);
    std::vector<double> finiteA, finiteB;
    int64_t nanMismatches = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) || std::isnan(b[i])) {
        nanMismatches += std::isnan(a[i]) != std::isnan(b[i]);
        continue;
      }
      finiteA.push_back(a[i]);
      finiteB.push_back(b[i]);
    }
    EXPECT_EQ(nanMismatches, 0) << what;
    EXPECT_LE(relNorm(finiteA, finiteB), tol) << what;
  }
}

/// Integer labels in [0, vocab), every `ignoreEvery`-th one (if > 0) the
/// ignore index -100.
Tensor labelsFor(int64_t tokens, int64_t vocab, unsigned seed, DType dtype,
                 int ignoreEvery) {
  std::mt19937 gen(seed);
  Tensor t({tokens}, dtype);
  for (int64_t i = 0; i < tokens; ++i) {
    bool ignored = ignoreEvery > 0 && i % ignoreEvery == 0;
    t.setFromDouble(i, ignored ? -100.0 : static_cast<double>(gen() % vocab));
  }
  return t;
}

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

} // namespace

TEST(RowsFastTest, LayerNormAndRmsNorm) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (const RowCase &c : kRowCases) {
      std::string name = caseName(c, dtype);
      Tensor x = dev(randomTensor({c.rows, c.d}, dtype, 1, -2.0, 2.0));
      // f32 weights with bf16/f16 activations (the training default), and
      // weights of the activations' dtype.
      for (DType wtype : {DType::F32, dtype}) {
        Tensor g = dev(randomTensor({c.d}, wtype, 2, 0.5, 1.5));
        Tensor b = dev(randomTensor({c.d}, wtype, 3));
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::layerNorm(x, g, b, 1e-5)}; },
            tolerance(dtype), "layernorm " + name);
        expectFastMatchesPortable(
            [&] {
              return std::vector<Tensor>{gpu::layerNorm(x, g, Tensor(), 1e-5)};
            },
            tolerance(dtype), "layernorm without bias " + name);
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::rmsNorm(x, g, 1e-6)}; },
            tolerance(dtype), "rmsnorm " + name);
      }
    }
}

TEST(RowsFastTest, LayerNormOfRowsWithALargeMean) {
  RTX_REQUIRE_GPU();
  // The mean (~1005) is large against the spread (~3): rounding it to f32
  // would shift every normalised element by ~1e-5; the fast kernel recovers
  // what the rounding lost.
  for (DType dtype : kFloatTypes)
    for (RowCase c : {RowCase{3, 768}, RowCase{3, 769}, RowCase{2, 3072}}) {
      Tensor x = dev(randomTensor({c.rows, c.d}, dtype, 4, 1000.0, 1010.0));
      Tensor g = dev(randomTensor({c.d}, DType::F32, 5, 0.5, 1.5));
      Tensor b = dev(randomTensor({c.d}, DType::F32, 6));
      expectFastMatchesPortable(
          [&] { return std::vector<Tensor>{gpu::layerNorm(x, g, b, 1e-5)}; },
          tolerance(dtype), "layernorm, large mean, " + caseName(c, dtype));
      Tensor dy = dev(randomTensor({c.rows, c.d}, dtype, 7));
      expectFastMatchesPortable(
          [&] { return gpu::layerNormGrad(x, g, dy, 1e-5); },
          gradTolerance(dtype),
          "layernorm_grad, large mean, " + caseName(c, dtype));
    }
}

TEST(RowsFastTest, NormGradients) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (const RowCase &c : kRowCases) {
      std::string name = caseName(c, dtype);
      Tensor x = dev(randomTensor({c.rows, c.d}, dtype, 8, -2.0, 2.0));
      Tensor dy = dev(randomTensor({c.rows, c.d}, dtype, 9));
      for (DType wtype : {DType::F32, dtype}) {
        Tensor g = dev(randomTensor({c.d}, wtype, 10, 0.5, 1.5));
        // {dx, dscale, dbias}: dscale and dbias are the two-stage column
        // sums over every row.
        expectFastMatchesPortable(
            [&] { return gpu::layerNormGrad(x, g, dy, 1e-5); },
            gradTolerance(dtype), "layernorm_grad " + name);
        // With one column, rmsnorm's dx = g eps / (x^2 + eps) is what is
        // left of two nearly equal terms: f32 keeps ~1e-2 of it, the
        // portable kernel's double all of it. Not a width anyone normalises.
        if (c.d > 1)
          expectFastMatchesPortable(
              [&] { return gpu::rmsNormGrad(x, g, dy, 1e-6); },
              gradTolerance(dtype), "rmsnorm_grad " + name);
      }
    }
}

TEST(RowsFastTest, SoftmaxAndItsGradient) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (const RowCase &c : kRowCases) {
      std::string name = caseName(c, dtype);
      Tensor x = dev(randomTensor({c.rows, c.d}, dtype, 11, -4.0, 4.0));
      expectFastMatchesPortable(
          [&] { return std::vector<Tensor>{gpu::softmax(x, -1)}; },
          tolerance(dtype), "softmax " + name);
      Tensor y = gpu::softmax(x, -1);
      Tensor dy = dev(randomTensor({c.rows, c.d}, dtype, 12));
      expectFastMatchesPortable(
          [&] { return std::vector<Tensor>{gpu::softmaxGrad(y, dy, -1)}; },
          gradTolerance(dtype), "softmax_grad " + name);
    }
}

TEST(RowsFastTest, SoftmaxIsStableForLargeLogitsAndMaskedEntries) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (RowCase c : {RowCase{3, 37}, RowCase{4, 768}, RowCase{3, 3072},
                      RowCase{2, 50304}}) {
      std::string name = caseName(c, dtype);
      // exp(1000) overflows f32: only the max-subtracted form survives.
      Tensor large =
          dev(randomTensor({c.rows, c.d}, dtype, 13, 1000.0, 1010.0));
      expectFastMatchesPortable(
          [&] { return std::vector<Tensor>{gpu::softmax(large, -1)}; },
          tolerance(dtype), "softmax of large logits " + name);
      // A causal-style mask: every third entry -inf, and the last row all
      // -inf (NaN on both paths, as in PyTorch).
      Tensor masked = randomTensor({c.rows, c.d}, dtype, 14, -4.0, 4.0);
      for (int64_t i = 0; i < masked.numel(); ++i)
        if (i % 3 == 1 || i / c.d == c.rows - 1)
          masked.setFromDouble(i, -INFINITY);
      Tensor m = dev(masked);
      expectFastMatchesPortableWithNaN(
          [&] { return std::vector<Tensor>{gpu::softmax(m, -1)}; },
          tolerance(dtype), "softmax with -inf " + name);
    }
}

TEST(RowsFastTest, SoftmaxOverAnInnerDimensionRunsThePortableBody) {
  RTX_REQUIRE_GPU();
  // Not covered by the fast kernel (strided rows): both paths are the
  // portable body, so they agree exactly.
  Tensor x = dev(randomTensor({3, 37, 5}, DType::BF16, 15));
  expectFastMatchesPortable(
      [&] { return std::vector<Tensor>{gpu::softmax(x, 1)}; }, 0.0,
      "softmax over dim 1");
}

TEST(RowsFastTest, CrossEntropyAndItsGradient) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (const RowCase &c : kRowCases) {
      std::string name = caseName(c, dtype);
      Tensor logits = dev(randomTensor({c.rows, c.d}, dtype, 16, -4.0, 4.0));
      for (DType ltype : {DType::I64, DType::I32})
        for (int ignoreEvery : {0, 3}) {
          Tensor labels = dev(labelsFor(c.rows, c.d, 17, ltype, ignoreEvery));
          bool hasIgnore = ignoreEvery > 0;
          std::string what = name + " labels " + dtypeName(ltype) +
                             (hasIgnore ? " with ignored" : "");
          // Both paths compute the loss in f32 or wider from the same
          // stored logits: the f32 tolerance in every dtype.
          expectFastMatchesPortable(
              [&] {
                return std::vector<Tensor>{
                    gpu::crossEntropy(logits, labels, hasIgnore, -100)};
              },
              1e-5, "cross_entropy " + what);
          Tensor lossGrad = dev(Tensor::scalar(1.5, DType::F32));
          expectFastMatchesPortable(
              [&] {
                return std::vector<Tensor>{gpu::crossEntropyGrad(
                    logits, labels, lossGrad, hasIgnore, -100)};
              },
              gradTolerance(dtype), "cross_entropy_grad " + what);
        }
    }
}

TEST(RowsFastTest, CrossEntropyOfLargeLogitsAndAllIgnoredTokens) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes) {
    RowCase c{5, 50304};
    std::string name = caseName(c, dtype);
    Tensor logits = dev(randomTensor({c.rows, c.d}, dtype, 18, 1000.0, 1010.0));
    Tensor labels = dev(labelsFor(c.rows, c.d, 19, DType::I64, 2));
    Tensor lossGrad = dev(Tensor::scalar(1.0, DType::F32));
    expectFastMatchesPortable(
        [&] {
          return std::vector<Tensor>{
              gpu::crossEntropy(logits, labels, true, -100),
              gpu::crossEntropyGrad(logits, labels, lossGrad, true, -100)};
        },
        gradTolerance(dtype), "cross-entropy of large logits " + name);
    // Every token ignored: a zero loss and a zero gradient on both paths.
    Tensor ignored = dev(labelsFor(c.rows, c.d, 20, DType::I64, 1));
    auto [portable, fast] = runBothPaths([&] {
      return std::vector<Tensor>{
          gpu::crossEntropy(logits, ignored, true, -100),
          gpu::crossEntropyGrad(logits, ignored, lossGrad, true, -100)};
    });
    for (const auto *results : {&portable, &fast}) {
      EXPECT_EQ((*results)[0].getAsDouble(0), 0.0) << name;
      std::vector<double> grad = toDoubles((*results)[1]);
      EXPECT_EQ(std::count(grad.begin(), grad.end(), 0.0),
                static_cast<std::ptrdiff_t>(grad.size()))
          << name;
    }
  }
}

TEST(RowsFastTest, F64RunsThePortableBodies) {
  RTX_REQUIRE_GPU();
  // f64 is not covered by the fast kernels: both paths run the portable
  // bodies and agree bit for bit.
  Tensor x = dev(randomTensor({3, 37}, DType::F64, 21));
  Tensor g = dev(randomTensor({37}, DType::F64, 22));
  expectFastMatchesPortable(
      [&] {
        return std::vector<Tensor>{gpu::layerNorm(x, g, Tensor(), 1e-5),
                                   gpu::softmax(x, -1)};
      },
      0.0, "f64 layernorm and softmax");
}

TEST(RowsFastTest, UnalignedViewsAreReadElementByElement) {
  RTX_REQUIRE_GPU();
  for (DType dtype : kFloatTypes)
    for (RowCase c : {RowCase{3, 768}, RowCase{2, 3072}}) {
      std::string name = caseName(c, dtype);
      Tensor x = unalignedOnDevice(randomTensor({c.rows, c.d}, dtype, 23));
      Tensor dy = unalignedOnDevice(randomTensor({c.rows, c.d}, dtype, 24));
      Tensor g = dev(randomTensor({c.d}, DType::F32, 25, 0.5, 1.5));
      Tensor labels = dev(labelsFor(c.rows, c.d, 26, DType::I64, 0));
      Tensor lossGrad = dev(Tensor::scalar(1.0, DType::F32));
      expectFastMatchesPortable(
          [&] {
            return std::vector<Tensor>{gpu::layerNorm(x, g, Tensor(), 1e-5),
                                       gpu::softmax(x, -1),
                                       gpu::crossEntropy(x, labels, false, 0)};
          },
          tolerance(dtype), "unaligned forward " + name);
      expectFastMatchesPortable(
          [&] {
            std::vector<Tensor> r = gpu::layerNormGrad(x, g, dy, 1e-5);
            r.push_back(gpu::crossEntropyGrad(x, labels, lossGrad, false, 0));
            return r;
          },
          gradTolerance(dtype), "unaligned gradients " + name);
    }
}
