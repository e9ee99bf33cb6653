//===- ContractionTest.cpp - matmul, batch_matmul, linear -----------------===//

#include "TestUtil.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// Naive C = op(A) op(B) in double; A is stored [M,K] or [K,M] (transposed),
/// B is stored [K,N] or [N,K].
std::vector<double> refMatmul(const std::vector<double> &a,
                              const std::vector<double> &b, bool ta, bool tb,
                              int64_t m, int64_t n, int64_t k,
                              int64_t batch = 1) {
  std::vector<double> c(batch * m * n, 0.0);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          double x = ta ? a[bi * m * k + p * m + i] : a[bi * m * k + i * k + p];
          double y = tb ? b[bi * k * n + j * k + p] : b[bi * k * n + p * n + j];
          s += x * y;
        }
        c[bi * m * n + i * n + j] = s;
      }
  return c;
}

class ContractionTest : public testing::TestWithParam<DType> {};

TEST_P(ContractionTest, MatmulAllTransposes) {
  DType d = GetParam();
  const int64_t m = 7, k = 13, n = 65;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randomTensor(ta ? Shape{k, m} : Shape{m, k}, d, 1);
      Tensor b = randomTensor(tb ? Shape{n, k} : Shape{k, n}, d, 2);
      Tensor c = matmul(a, b, ta, tb);
      EXPECT_EQ(c.dtype(), d);
      expectClose(c, {m, n},
                  refMatmul(toDoubles(a), toDoubles(b), ta, tb, m, n, k));
    }
}

TEST_P(ContractionTest, BatchMatmulAllTransposes) {
  DType d = GetParam();
  const int64_t m = 7, k = 13, n = 5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randomTensor(ta ? Shape{2, 3, k, m} : Shape{2, 3, m, k}, d, 3);
      Tensor b = randomTensor(tb ? Shape{2, 3, n, k} : Shape{2, 3, k, n}, d, 4);
      Tensor c = batchMatmul(a, b, ta, tb);
      expectClose(c, {2, 3, m, n},
                  refMatmul(toDoubles(a), toDoubles(b), ta, tb, m, n, k, 6));
    }
}

TEST_P(ContractionTest, LinearWithAndWithoutBias) {
  DType d = GetParam();
  const int64_t in = 13, out = 65;
  Tensor x = randomTensor({2, 7, in}, d, 5);
  Tensor w = randomTensor({out, in}, d, 6);
  Tensor b = randomTensor({out}, d, 7);
  // Reference: x [14, in] times w^T, plus the bias per output feature.
  std::vector<double> ref =
      refMatmul(toDoubles(x), toDoubles(w), false, true, 14, out, in);
  expectClose(linear(x, w, Tensor()), {2, 7, out}, ref);
  std::vector<double> bv = toDoubles(b);
  for (int64_t t = 0; t < 14; ++t)
    for (int64_t j = 0; j < out; ++j)
      ref[t * out + j] += bv[j];
  expectClose(linear(x, w, b), {2, 7, out}, ref);
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ContractionTest,
                         testing::Values(DType::F32, DType::F64, DType::BF16,
                                         DType::F16),
                         dtypeParamName);

TEST(ContractionErrorTest, ShapeMismatchesNameTheOp) {
  Tensor a({7, 13}, DType::F32), b({12, 5}, DType::F32);
  expectError([&] { matmul(a, b, false, false); },
              {"rtx.matmul", "[7, 13]", "[12, 5]"});
  expectError(
      [&] {
        matmul(a, Tensor({13, 5}, DType::F64), false, false);
      },
      {"rtx.matmul", "f64"});
  expectError(
      [&] {
        batchMatmul(Tensor({2, 7, 13}, DType::F32),
                    Tensor({3, 13, 5}, DType::F32), false, false);
      },
      {"rtx.batch_matmul", "batch"});
  expectError(
      [&] {
        linear(Tensor({4, 13}, DType::F32), Tensor({5, 12}, DType::F32),
               Tensor());
      },
      {"rtx.linear", "[5, 12]"});
  expectError(
      [&] {
        linear(Tensor({4, 13}, DType::F32), Tensor({5, 13}, DType::F32),
               Tensor({4}, DType::F32));
      },
      {"rtx.linear", "bias"});
  expectError(
      [&] {
        matmul(Tensor({2, 2}, DType::I32), Tensor({2, 2}, DType::I32), false,
               false);
      },
      {"rtx.matmul", "float"});
}

TEST(ContractionEdgeTest, EmptyContractionGivesZeros) {
  Tensor c = matmul(Tensor({3, 0}, DType::F32), Tensor({0, 4}, DType::F32),
                    false, false);
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  for (double v : toDoubles(c))
    EXPECT_EQ(v, 0.0);
}

} // namespace

//===----------------------------------------------------------------------===//
// rtx.gemm_epilogue: exactly the unfused kernels it replaces
//===----------------------------------------------------------------------===//

namespace {

/// Bitwise equality: the fused CPU kernel is the unfused kernels' composition.
void expectIdentical(const Tensor &actual, const Tensor &expected,
                     const std::string &what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  EXPECT_EQ(toDoubles(actual), toDoubles(expected)) << what;
}

} // namespace

TEST(GemmEpilogueTest, BiasGeluEqualsLinearThenGelu) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool tanh : {false, true}) {
      Tensor x = randomTensor({2, 7, 13}, dtype, 1);
      Tensor w = randomTensor({37, 13}, dtype, 2);
      Tensor b = randomTensor({37}, dtype, 3);
      Tensor pre = linear(x, w, b);
      Tensor y = unary(tanh ? UnaryKind::GeluTanh : UnaryKind::Gelu, pre);
      GemmEpilogue withAux =
          tanh ? GemmEpilogue::BiasGeluTanhAux : GemmEpilogue::BiasGeluAux;
      GemmEpilogue alone =
          tanh ? GemmEpilogue::BiasGeluTanh : GemmEpilogue::BiasGelu;
      std::string what = std::string(dtypeName(dtype)) + (tanh ? " tanh" : "");
      std::vector<Tensor> fused =
          gemmEpilogue(withAux, x, w, false, true, b, Tensor());
      ASSERT_EQ(fused.size(), 2u);
      expectIdentical(fused[0], y, what + " result");
      expectIdentical(fused[1], pre, what + " pre-activation");
      fused = gemmEpilogue(alone, x, w, false, true, b, Tensor());
      ASSERT_EQ(fused.size(), 1u);
      expectIdentical(fused[0], y, what + " without aux");
    }
}

TEST(GemmEpilogueTest, BiasGeluOtherLayoutsMatchTheProduct) {
  // lhs [K, M] and rhs [K, N]: the same values as the linear of the
  // transposed operands, against a double reference.
  Tensor a = randomTensor({7, 5}, DType::F32, 4); // [K, M]
  Tensor w = randomTensor({7, 3}, DType::F32, 5); // [K, N]
  Tensor b = randomTensor({3}, DType::F32, 6);
  std::vector<Tensor> fused =
      gemmEpilogue(GemmEpilogue::BiasGeluAux, a, w, true, false, b, Tensor());
  std::vector<double> p =
      refMatmul(toDoubles(a), toDoubles(w), true, false, 5, 3, 7);
  std::vector<double> bias = toDoubles(b);
  for (int64_t i = 0; i < 15; ++i)
    p[i] += bias[i % 3];
  EXPECT_LE(relNorm(toDoubles(fused[1]), p), 1e-6);
}

TEST(GemmEpilogueTest, BiasGradEqualsMatmulAndSum) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool ta : {true, false}) {
      // dY [T, N_out] (transposed: the weight gradient dY^T X), or [M, K].
      Tensor dy = randomTensor({37, 7}, dtype, 7);
      Tensor x = randomTensor(ta ? Shape{37, 5} : Shape{7, 5}, dtype, 8);
      std::vector<Tensor> fused = gemmEpilogue(GemmEpilogue::BiasGrad, dy, x,
                                               ta, false, Tensor(), Tensor());
      ASSERT_EQ(fused.size(), 2u);
      std::string what = std::string(dtypeName(dtype)) + (ta ? " dY^T X" : "");
      expectIdentical(fused[0], matmul(dy, x, ta, false), what + " product");
      expectIdentical(fused[1],
                      reduce(ReduceKind::Sum, dy, {ta ? 0 : 1}, false),
                      what + " bias gradient");
    }
}

TEST(GemmEpilogueTest, DGeluEqualsMatmulThenUnaryGrad) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool tanh : {false, true})
      for (bool tb : {false, true}) {
        Tensor dy = randomTensor({13, 7}, dtype, 9);
        Tensor w = randomTensor(tb ? Shape{37, 7} : Shape{7, 37}, dtype, 10);
        Tensor pre = randomTensor({13, 37}, dtype, 11, -3, 3);
        UnaryFn fn = tanh ? UnaryFn::GeluTanh : UnaryFn::Gelu;
        Tensor expected = unaryGrad(fn, pre, matmul(dy, w, false, tb));
        std::vector<Tensor> fused =
            gemmEpilogue(tanh ? GemmEpilogue::DGeluTanh : GemmEpilogue::DGelu,
                         dy, w, false, tb, Tensor(), pre);
        ASSERT_EQ(fused.size(), 1u);
        expectIdentical(fused[0], expected,
                        std::string(dtypeName(dtype)) + (tanh ? " tanh" : ""));
      }
}

TEST(GemmEpilogueTest, MissingOrExtraOperandsNameTheEpilogue) {
  Tensor x = randomTensor({4, 3}, DType::F32, 12);
  Tensor w = randomTensor({5, 3}, DType::F32, 13);
  Tensor b = randomTensor({5}, DType::F32, 14);
  EXPECT_TRUE(contains(errorOf([&] {
                         gemmEpilogue(GemmEpilogue::BiasGelu, x, w, false, true,
                                      Tensor(), Tensor());
                       }),
                       "rtx.gemm_epilogue BiasGelu: needs bias"));
  EXPECT_TRUE(contains(errorOf([&] {
                         gemmEpilogue(GemmEpilogue::BiasGrad, x, w, false, true,
                                      b, Tensor());
                       }),
                       "takes no bias"));
  EXPECT_TRUE(contains(errorOf([&] {
                         gemmEpilogue(GemmEpilogue::DGelu, x, w, false, true,
                                      Tensor(), x);
                       }),
                       "pre-activation [4, 3] must be [4, 5]"));
}
