//===- FlashAttentionTest.cpp - flash attention against the portable one --===//
//
// gpu::attention and gpu::attentionGrad on the fast path (the flash kernels
// of runtime/lib/gpu/fast/FlashAttention.cu) against the portable path
// (cuBLAS GEMMs and a row softmax over materialised scores), on the GPU.
// Shapes cross every tile boundary (tiles of 64 rows: 1, 7, 64, 65, 129,
// 1024), queries and keys of different lengths, grouped heads (1, 2, 4),
// head dims 64 and 128, batch 1 and 3, and scores large enough to overflow
// exp without the running maximum. Tolerances are design.md's (relative
// norm: f32 1e-5 forward, 1e-4 gradients; bf16 1e-2); f16, which has 3 more
// mantissa bits than bf16, is held to 2e-3 and 5e-3. The CTA emulation of
// the same kernels on the host (test/Unit/Runtime/
// FlashAttentionEmulationTest.cpp) measured f32 2e-7 to 4e-6, bf16 2e-3 to
// 6e-3, f16 3e-4 against the CPU kernels. (RTX_ALLOW_TF32=1 would put the
// portable f32 GEMMs on TF32: leave it unset.)
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#include <cmath>
#include <string>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

struct Case {
  int64_t b, hq, hkv, sq, skv, d;
  bool causal;
  DType dtype;
  double magnitude = 1.0; // q and k uniform in [-magnitude, magnitude)
};

std::string describe(const Case &c) {
  return std::string(dtypeName(c.dtype)) + " B=" + std::to_string(c.b) +
         " Hq=" + std::to_string(c.hq) + " Hkv=" + std::to_string(c.hkv) +
         " Sq=" + std::to_string(c.sq) + " Skv=" + std::to_string(c.skv) +
         " D=" + std::to_string(c.d) + (c.causal ? " causal" : "") +
         " magnitude=" + std::to_string(c.magnitude);
}

double forwardTolerance(DType dtype) {
  switch (dtype) {
  case DType::F64: // no flash kernel: the portable one on both paths
    return 0.0;
  case DType::F32:
    return 1e-5;
  case DType::F16:
    return 2e-3;
  default:
    return 1e-2;
  }
}
double gradTolerance(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 0.0;
  case DType::F32:
    return 1e-4;
  case DType::F16:
    return 5e-3;
  default:
    return 1e-2;
  }
}

/// The forward and the backward of one case, fast against portable.
void check(const Case &c, unsigned seed) {
  Tensor q = gpu::toDevice(randomTensor({c.b, c.hq, c.sq, c.d}, c.dtype, seed,
                                        -c.magnitude, c.magnitude));
  Tensor k = gpu::toDevice(randomTensor({c.b, c.hkv, c.skv, c.d}, c.dtype,
                                        seed + 1, -c.magnitude, c.magnitude));
  Tensor v =
      gpu::toDevice(randomTensor({c.b, c.hkv, c.skv, c.d}, c.dtype, seed + 2));
  Tensor dout =
      gpu::toDevice(randomTensor({c.b, c.hq, c.sq, c.d}, c.dtype, seed + 3));
  double scale = 1.0 / std::sqrt(double(c.d));
  expectFastMatchesPortable(
      [&] {
        return std::vector<Tensor>{gpu::attention(q, k, v, c.causal, scale)};
      },
      forwardTolerance(c.dtype), describe(c) + " forward");
  expectFastMatchesPortable(
      [&] { return gpu::attentionGrad(q, k, v, dout, c.causal, scale); },
      gradTolerance(c.dtype), describe(c) + " backward (dq, dk, dv)");
}

const DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};

TEST(FlashAttentionTest, EveryTileBoundaryGroupAndHeadDim) {
  RTX_REQUIRE_GPU();
  unsigned seed = 100;
  const int64_t groups[] = {1, 2, 4};
  for (DType dtype : kDtypes)
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t s : {1, 7, 64, 65, 129}) {
          int64_t group = groups[seed % 3], batch = seed % 2 ? 3 : 1;
          check({batch, 2 * group, 2, s, s, d, causal, dtype}, seed++);
        }
}

TEST(FlashAttentionTest, LongSequences) {
  RTX_REQUIRE_GPU();
  unsigned seed = 200;
  for (DType dtype : kDtypes)
    for (int64_t d : {64, 128})
      check({1, 4, 1, 1024, 1024, d, true, dtype}, seed++);
  check({3, 2, 2, 1024, 1024, 64, false, DType::BF16}, seed++);
}

TEST(FlashAttentionTest, QueriesAndKeysOfDifferentLengths) {
  RTX_REQUIRE_GPU(); // causal attention needs Sq == Skv: these are not causal
  unsigned seed = 300;
  for (DType dtype : kDtypes)
    for (int64_t d : {64, 128}) {
      check({1, 2, 1, 1, 129, d, false, dtype}, seed++);
      check({3, 4, 2, 65, 7, d, false, dtype}, seed++);
      check({1, 4, 1, 200, 1000, d, false, dtype}, seed++);
    }
}

TEST(FlashAttentionTest, LargeScoresStayFinite) {
  RTX_REQUIRE_GPU();
  // q and k up to 16: scaled scores of several hundred, beyond exp's f32
  // range (88) without the running maximum.
  unsigned seed = 400;
  for (DType dtype : kDtypes)
    for (bool causal : {false, true})
      check({1, 4, 2, 129, 129, 64, causal, dtype, 16.0}, seed++);
}

TEST(FlashAttentionTest, UncoveredCasesRunThePortableKernels) {
  RTX_REQUIRE_GPU();
  // Head dim 96 and f64 have no flash kernel: both paths are the portable
  // one, and an empty query is empty on both.
  check({1, 2, 1, 33, 33, 96, true, DType::BF16}, 500);
  check({1, 2, 1, 33, 33, 64, true, DType::F64}, 501);
  check({1, 2, 1, 0, 0, 64, false, DType::F32}, 502);
}

} // namespace
