//===- FlashAttentionEmulationTest.cpp - flash kernels on CPU threads -----===//
//
// The flash-attention kernels of runtime/lib/gpu/fast (the GPU's fast path)
// run here on the host through CtaEmulation.h (a thread per CUDA thread,
// real barriers, mma.sync by the PTX ISA's fragment table) and are compared
// with the CPU kernels rtxrt::attention and rtxrt::attentionGrad. This is
// what checks their tiling, masking, online softmax, grouped heads and
// synchronisation where no GPU is; test/Unit/Gpu/FlashAttentionTest.cpp
// compares the real kernels with the portable ones on a GPU. The emulation
// is slow, so the shapes are small, but each crosses a tile boundary.
//
//===----------------------------------------------------------------------===//

#include "CtaEmulation.h"

#include "gpu/fast/FlashAttentionKernels.h"

#include "TestUtil.h"

#include <cstring>

using namespace rtxrt;
using namespace rtxrt::test;
namespace flash = rtxrt::gpu::fast::flash;

namespace {

template <typename T> const T *in(const Tensor &t) {
  return static_cast<const T *>(t.raw());
}
template <typename T> T *out(Tensor &t) { return static_cast<T *>(t.raw()); }

/// A result tensor full of NaN bytes: an element no kernel writes fails.
Tensor poisoned(const Shape &shape, DType dtype) {
  Tensor t(shape, dtype);
  std::memset(t.raw(), 0xff, t.nbytes());
  return t;
}

/// The fields of rtxrt::detail::AttentionDims the launch geometry reads.
struct AttentionDims {
  int64_t b, hq, sq, d, hkv, skv, group;
};

struct Case {
  int64_t b, hq, hkv, sq, skv, d;
  bool causal;
  DType dtype;
  double magnitude = 1.0; // inputs uniform in [-magnitude, magnitude)
};

std::string describe(const Case &c) {
  return std::string(dtypeName(c.dtype)) + " B=" + std::to_string(c.b) +
         " Hq=" + std::to_string(c.hq) + " Hkv=" + std::to_string(c.hkv) +
         " Sq=" + std::to_string(c.sq) + " Skv=" + std::to_string(c.skv) +
         " D=" + std::to_string(c.d) + (c.causal ? " causal" : "") +
         " magnitude=" + std::to_string(c.magnitude);
}

template <typename T, int D>
Tensor emulatedForward(const AttentionDims &s, const Tensor &q, const Tensor &k,
                       const Tensor &v, bool causal, double scale,
                       float *lse2) {
  Tensor o = poisoned(q.shape(), q.dtype());
  cta::launch(flash::flashForwardKernel<T, D>, flash::queryTileCtas(s),
              flash::kThreads, flash::ForwardSmem<T, D>::bytes,
              flash::flashArgs(s, causal, scale), in<T>(q), in<T>(k), in<T>(v),
              out<T>(o), lse2);
  return o;
}

/// The sequence of FlashAttention.cu's backward, on the emulation.
template <typename T, int D>
std::vector<Tensor> emulatedBackward(const AttentionDims &s, const Tensor &q,
                                     const Tensor &k, const Tensor &v,
                                     const Tensor &dout, bool causal,
                                     double scale) {
  int64_t rows = s.b * s.hq * s.sq;
  std::vector<float> lse2(rows, NAN), delta(rows, NAN);
  Tensor o = emulatedForward<T, D>(s, q, k, v, causal, scale, lse2.data());
  cta::launch(flash::rowDotKernel<T>, flash::rowDotCtas(rows), flash::kThreads,
              0, rows, D, in<T>(dout), in<T>(o), delta.data());
  Tensor dq = poisoned(q.shape(), q.dtype());
  Tensor dk = poisoned(k.shape(), k.dtype());
  Tensor dv = poisoned(v.shape(), v.dtype());
  flash::GradPointers<T> p{in<T>(q),    in<T>(k),    in<T>(v),
                           in<T>(dout), lse2.data(), delta.data(),
                           out<T>(dq),  out<T>(dk),  out<T>(dv)};
  flash::FlashArgs args = flash::flashArgs(s, causal, scale);
  cta::launch(flash::flashGradKeyKernel<T, D>, flash::keyTileCtas(s),
              flash::kThreads, flash::GradSmem<T, D>::bytes, args, p,
              float(scale));
  cta::launch(flash::flashGradQueryKernel<T, D>, flash::queryTileCtas(s),
              flash::kThreads, flash::GradSmem<T, D>::bytes, args, p,
              float(scale));
  return {dq, dk, dv};
}

template <typename T>
void runCase(const Case &c, const AttentionDims &s, const Tensor &q,
             const Tensor &k, const Tensor &v, const Tensor &dout, double scale,
             double forwardTolerance, double gradTolerance) {
  Tensor expected = attention(q, k, v, c.causal, scale);
  std::vector<Tensor> expectedGrads =
      attentionGrad(q, k, v, dout, c.causal, scale);
  Tensor actual;
  std::vector<Tensor> grads;
  if (c.d == 64) {
    actual = emulatedForward<T, 64>(s, q, k, v, c.causal, scale, nullptr);
    grads = emulatedBackward<T, 64>(s, q, k, v, dout, c.causal, scale);
  } else {
    ASSERT_EQ(c.d, 128);
    actual = emulatedForward<T, 128>(s, q, k, v, c.causal, scale, nullptr);
    grads = emulatedBackward<T, 128>(s, q, k, v, dout, c.causal, scale);
  }
  EXPECT_LE(relNorm(toDoubles(actual), toDoubles(expected)), forwardTolerance)
      << describe(c) << ": the output";
  const char *names[] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(relNorm(toDoubles(grads[i]), toDoubles(expectedGrads[i])),
              gradTolerance)
        << describe(c) << ": " << names[i];
}

/// The fast kernels against the CPU kernels on one case, with design.md's
/// tolerances (f32: 1e-5 forward, 1e-4 gradients; bf16 1e-2; f16 between:
/// P and dS are rounded to the input dtype before their products).
void check(const Case &c) {
  Tensor q = randomTensor({c.b, c.hq, c.sq, c.d}, c.dtype, 11, -c.magnitude,
                          c.magnitude);
  Tensor k = randomTensor({c.b, c.hkv, c.skv, c.d}, c.dtype, 12, -c.magnitude,
                          c.magnitude);
  Tensor v = randomTensor({c.b, c.hkv, c.skv, c.d}, c.dtype, 13);
  Tensor dout = randomTensor({c.b, c.hq, c.sq, c.d}, c.dtype, 14);
  double scale = 1.0 / std::sqrt(double(c.d));
  AttentionDims s{c.b, c.hq, c.sq, c.d, c.hkv, c.skv, c.hq / c.hkv};
  // Measured (2026-12-05): f32 2e-7 to 5e-7 (gradients 4e-6 at magnitude
  // 16), bf16 2e-3 to 3e-3 (dq 6e-3 at magnitude 16), f16 3e-4.
  switch (c.dtype) {
  case DType::F32:
    runCase<float>(c, s, q, k, v, dout, scale, 1e-5, 1e-4);
    break;
  case DType::BF16:
    runCase<__nv_bfloat16>(c, s, q, k, v, dout, scale, 1e-2, 1e-2);
    break;
  case DType::F16:
    runCase<__half>(c, s, q, k, v, dout, scale, 2e-3, 5e-3);
    break;
  default:
    FAIL() << "no flash kernel for " << dtypeName(c.dtype);
  }
}

TEST(FlashAttentionEmulationTest, F32AcrossTileBoundariesWithGroupedHeads) {
  // 65 rows: a full tile and a 1-row tail, in queries and keys.
  check({1, 2, 1, 65, 65, 64, false, DType::F32});
  check({1, 2, 1, 65, 65, 64, true, DType::F32});
}

TEST(FlashAttentionEmulationTest, F32FewQueriesManyKeys) {
  check({2, 1, 1, 7, 70, 64, false, DType::F32});
  check({1, 1, 1, 1, 1, 64, false, DType::F32});
  check({1, 1, 1, 1, 1, 64, true, DType::F32});
}

TEST(FlashAttentionEmulationTest, Bf16OnTheTensorCores) {
  check({2, 4, 1, 33, 33, 64, true, DType::BF16});   // group 4
  check({1, 2, 2, 65, 65, 128, true, DType::BF16});  // head dim 128
  check({1, 2, 1, 20, 67, 128, false, DType::BF16}); // Sq != Skv
}

TEST(FlashAttentionEmulationTest, F16OnTheTensorCores) {
  check({1, 2, 1, 17, 17, 64, true, DType::F16});
  check({1, 1, 1, 9, 40, 128, false, DType::F16});
}

TEST(FlashAttentionEmulationTest, LargeScoresStayFinite) {
  // Inputs up to 16: scaled scores of a few hundred, beyond exp's f32
  // range (88) without the running maximum.
  check({1, 2, 1, 65, 65, 64, true, DType::F32, 16.0});
  check({1, 2, 1, 33, 33, 64, false, DType::BF16, 16.0});
}

} // namespace
