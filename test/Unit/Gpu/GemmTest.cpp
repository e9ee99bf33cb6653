//===- GemmTest.cpp - cuBLASLt GEMMs against the portable ones ------------===//
//
// The fast path runs every GEMM as one cuBLASLt matmul on the operands' own
// type (runtime/lib/gpu/fast/CublasLt.cu) and rtx.gemm_epilogue's epilogues
// inside it; the portable path widens bf16 to f32 for cuBLAS and runs the
// epilogues as the unfused kernels. Tolerances (relative norm): f32 1e-5
// (only the summation order differs), TF32 5e-3 (10-bit mantissas in), bf16
// 1e-2 (the fast path rounds once, after the epilogue; the portable one also
// rounds the product before it), f32 GELU epilogues 1e-3 (cuBLASLt may
// evaluate tanh with the hardware approximation, about 5e-4 relative).
// Shapes: 1, 7, 37 and over 1000 in each of M, N, K, every transpose, bias
// widths that are and are not multiples of 8 (cuBLASLt's aux layout needs
// one; the others take the portable path), large magnitudes.
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#include <string>
#include <tuple>
#include <vector>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

Tensor dev(const Tensor &t) { return t.defined() ? gpu::toDevice(t) : t; }

double gemmTolerance(DType dtype) { return dtype == DType::BF16 ? 1e-2 : 1e-5; }

struct Dims {
  int64_t m, n, k;
};
/// 1, 7, 37 and over 1000 in each dimension, without a cube of 1000s.
const std::vector<Dims> kShapes = {
    {1, 1, 1},     {1, 7, 37},    {7, 1, 37},    {37, 7, 1},    {37, 37, 37},
    {1031, 37, 7}, {7, 1029, 37}, {37, 7, 1027}, {129, 257, 65}};

std::string describe(const Dims &d, bool ta, bool tb, DType dtype) {
  return std::string(dtypeName(dtype)) + " M=" + std::to_string(d.m) +
         " N=" + std::to_string(d.n) + " K=" + std::to_string(d.k) +
         (ta ? " lhs^T" : "") + (tb ? " rhs^T" : "");
}

Tensor lhsOf(const Dims &d, bool ta, DType dtype, unsigned seed) {
  return randomTensor(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, dtype, seed);
}
Tensor rhsOf(const Dims &d, bool tb, DType dtype, unsigned seed) {
  return randomTensor(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, dtype, seed);
}

} // namespace

TEST(GemmFastTest, MatmulEveryShapeAndTranspose) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (const Dims &d : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Tensor a = dev(lhsOf(d, ta, dtype, 1)),
                 b = dev(rhsOf(d, tb, dtype, 2));
          expectFastMatchesPortable(
              [&] { return std::vector<Tensor>{gpu::matmul(a, b, ta, tb)}; },
              gemmTolerance(dtype), describe(d, ta, tb, dtype));
        }
}

TEST(GemmFastTest, MatmulLargeMagnitudes) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor a = dev(randomTensor({37, 65}, dtype, 3, -1e4, 1e4));
    Tensor b = dev(randomTensor({65, 29}, dtype, 4, -1e4, 1e4));
    expectFastMatchesPortable(
        [&] { return std::vector<Tensor>{gpu::matmul(a, b, false, false)}; },
        gemmTolerance(dtype), std::string("large ") + dtypeName(dtype));
  }
}

TEST(GemmFastTest, Tf32IsAnOptionOfF32) {
  RTX_REQUIRE_GPU();
  Tensor a = dev(randomTensor({129, 257}, DType::F32, 5));
  Tensor b = dev(randomTensor({257, 65}, DType::F32, 6));
  // TF32 on the fast path only: the portable result is strict f32.
  expectFastMatchesPortable(
      [&] {
        gpu::setTf32(gpu::kernelPath() == gpu::KernelPath::Fast);
        return std::vector<Tensor>{gpu::matmul(a, b, false, true)};
      },
      5e-3, "tf32 against strict f32");
  gpu::setTf32(false);
}

TEST(GemmFastTest, BatchMatmul) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (Dims d : {Dims{1, 7, 37}, Dims{37, 7, 1}, Dims{65, 33, 17}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Shape lhs = ta ? Shape{2, 3, d.k, d.m} : Shape{2, 3, d.m, d.k};
          Shape rhs = tb ? Shape{2, 3, d.n, d.k} : Shape{2, 3, d.k, d.n};
          Tensor a = dev(randomTensor(lhs, dtype, 7));
          Tensor b = dev(randomTensor(rhs, dtype, 8));
          expectFastMatchesPortable(
              [&] {
                return std::vector<Tensor>{gpu::batchMatmul(a, b, ta, tb)};
              },
              gemmTolerance(dtype), "batch " + describe(d, ta, tb, dtype));
        }
}

TEST(GemmFastTest, LinearWithAndWithoutBias) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (int64_t out : {1, 7, 37, 1029})
      for (bool withBias : {false, true}) {
        Tensor x = dev(randomTensor({2, 37, 65}, dtype, 9));
        Tensor w = dev(randomTensor({out, 65}, dtype, 10));
        Tensor b = withBias ? dev(randomTensor({out}, dtype, 11)) : Tensor();
        expectFastMatchesPortable(
            [&] { return std::vector<Tensor>{gpu::linear(x, w, b)}; },
            gemmTolerance(dtype),
            std::string("linear ") + dtypeName(dtype) + " out " +
                std::to_string(out) + (withBias ? " bias" : ""));
      }
}

TEST(GemmFastTest, BiasGeluEpilogues) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (GemmEpilogue e :
         {GemmEpilogue::BiasGelu, GemmEpilogue::BiasGeluTanh,
          GemmEpilogue::BiasGeluAux, GemmEpilogue::BiasGeluTanhAux})
      // 64 and 1024: cuBLASLt's epilogue; 37: its aux layout cannot, the
      // portable kernels run.
      for (int64_t out : {64, 37, 1024}) {
        Tensor x = dev(randomTensor({3, 37, 129}, dtype, 12));
        Tensor w = dev(randomTensor({out, 129}, dtype, 13));
        Tensor b = dev(randomTensor({out}, dtype, 14));
        expectFastMatchesPortable(
            [&] {
              return gpu::gemmEpilogue(e, x, w, false, true, b, Tensor());
            },
            dtype == DType::BF16 ? 1e-2 : 1e-3,
            std::string(enumeratorName(e)) + " " + dtypeName(dtype) + " out " +
                std::to_string(out));
      }
}

TEST(GemmFastTest, BiasGradEpilogue) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (Dims d : {Dims{64, 32, 1031}, Dims{37, 7, 13}, Dims{1, 1, 1}})
      for (bool ta : {true, false}) {
        // The weight gradient dY^T X: lhs dY [T, N_out] transposed.
        Tensor dy = dev(lhsOf(d, ta, dtype, 15));
        Tensor x = dev(rhsOf(d, false, dtype, 16));
        expectFastMatchesPortable(
            [&] {
              return gpu::gemmEpilogue(GemmEpilogue::BiasGrad, dy, x, ta, false,
                                       Tensor(), Tensor());
            },
            gemmTolerance(dtype), "bias_grad " + describe(d, ta, false, dtype));
      }
}

TEST(GemmFastTest, DGeluEpilogues) {
  RTX_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::BF16})
    for (GemmEpilogue e : {GemmEpilogue::DGelu, GemmEpilogue::DGeluTanh})
      for (Dims d : {Dims{1031, 256, 64}, Dims{37, 37, 7}})
        for (bool tb : {false, true}) {
          Tensor dy = dev(lhsOf(d, false, dtype, 17));
          Tensor w = dev(rhsOf(d, tb, dtype, 18));
          Tensor pre = dev(randomTensor({d.m, d.n}, dtype, 19, -4, 4));
          expectFastMatchesPortable(
              [&] {
                return gpu::gemmEpilogue(e, dy, w, false, tb, Tensor(), pre);
              },
              dtype == DType::BF16 ? 1e-2 : 1e-3,
              std::string(enumeratorName(e)) + " " +
                  describe(d, false, tb, dtype));
        }
}

TEST(GemmFastTest, AttentionProductsOnCublasLt) {
  RTX_REQUIRE_GPU();
  // Attention's portable kernels run their products through gemmBatched,
  // which takes cuBLASLt on the fast path: strided batches of [g*Sq, D]
  // blocks, grouped heads, causal and not.
  for (bool causal : {false, true}) {
    Tensor q = dev(randomTensor({2, 4, 37, 16}, DType::F32, 20));
    Tensor k = dev(randomTensor({2, 2, 37, 16}, DType::F32, 21));
    Tensor v = dev(randomTensor({2, 2, 37, 16}, DType::F32, 22));
    Tensor dout = dev(randomTensor({2, 4, 37, 16}, DType::F32, 23));
    expectFastMatchesPortable(
        [&] {
          std::vector<Tensor> results =
              gpu::attentionGrad(q, k, v, dout, causal, 0.25);
          results.push_back(gpu::attention(q, k, v, causal, 0.25));
          return results;
        },
        1e-5, causal ? "causal attention" : "attention");
  }
}
