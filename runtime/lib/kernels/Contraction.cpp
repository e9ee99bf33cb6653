//===- Contraction.cpp - matmul, batch_matmul, linear ---------------------===//
//
// All three reduce to row-major GEMM calls on OpenBLAS. bf16/f16 operands are
// widened to f32 first (OpenBLAS 0.3.21 has no bf16 GEMM in Debian's build)
// and the result is rounded back, as the header promises.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/Kernels.h"

#include "Blas.h"
#include "KernelUtils.h"

#include <climits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

/// The matrix dimensions of one operand after its optional transpose.
struct MatrixDims {
  int64_t rows, cols;
};

MatrixDims lastTwo(const Tensor &t, bool transposed) {
  int64_t r = t.dim(t.rank() - 2), c = t.dim(t.rank() - 1);
  return transposed ? MatrixDims{c, r} : MatrixDims{r, c};
}

void checkBlasSize(const std::string &op, int64_t value) {
  if (value > INT_MAX)
    fail(op, "dimension " + std::to_string(value) +
                 " exceeds what a 32-bit BLAS accepts");
}

/// out[b] = op(lhs[b]) * op(rhs[b]) for every batch index b, in the compute
/// type (callers round to bf16/f16 once, after any epilogue).
/// `rhsBatchStride` is 0 when every batch uses the same rhs (linear).
Tensor contract(const std::string &op, const Tensor &lhs, const Tensor &rhs,
                bool transLhs, bool transRhs, int64_t batch, int64_t m,
                int64_t n, int64_t k, int64_t rhsBatchStride,
                Shape resultShape) {
  for (int64_t v : {m, n, k})
    checkBlasSize(op, v);
  Tensor a = toCompute(lhs), b = toCompute(rhs);
  return dispatchCompute(lhs.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (m == 0 || n == 0 || k == 0 || batch == 0)
      return Tensor(resultShape, computeType(lhs.dtype())); // zeros
    // Every element is written by the GEMMs (beta = 0).
    Tensor out = Tensor::uninitialized(resultShape, computeType(lhs.dtype()));
    const T *pa = a.data<T>();
    const T *pb = b.data<T>();
    T *pc = out.data<T>();
    // lda/ldb are the stored (pre-transpose) row lengths.
    int64_t lda = transLhs ? m : k;
    int64_t ldb = transRhs ? k : n;
    for (int64_t i = 0; i < batch; ++i)
      gemm(transLhs, transRhs, m, n, k, T(1), pa + i * m * k, lda,
           pb + i * rhsBatchStride, ldb, T(0), pc + i * m * n, n);
    return out;
  });
}

std::string describe(const char *name, const Tensor &t, bool transposed) {
  return std::string(name) + " " + shapeToString(t.shape()) +
         (transposed ? " (transposed)" : "");
}

} // namespace

Tensor rtxrt::matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                     bool transposeRhs) {
  const std::string op = "rtx.matmul";
  checkFloat(op, lhs, "lhs");
  checkFloat(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  if (lhs.rank() != 2 || rhs.rank() != 2)
    fail(op, "operands must be matrices, got lhs " +
                 shapeToString(lhs.shape()) + " and rhs " +
                 shapeToString(rhs.shape()));
  MatrixDims a = lastTwo(lhs, transposeLhs), b = lastTwo(rhs, transposeRhs);
  if (a.cols != b.rows)
    fail(op, "contracting sizes differ: " + describe("lhs", lhs, transposeLhs) +
                 " gives K=" + std::to_string(a.cols) + ", " +
                 describe("rhs", rhs, transposeRhs) +
                 " gives K=" + std::to_string(b.rows));
  return fromCompute(contract(op, lhs, rhs, transposeLhs, transposeRhs, 1,
                              a.rows, b.cols, a.cols, 0, {a.rows, b.cols}),
                     lhs.dtype());
}

Tensor rtxrt::batchMatmul(const Tensor &lhs, const Tensor &rhs,
                          bool transposeLhs, bool transposeRhs) {
  const std::string op = "rtx.batch_matmul";
  checkFloat(op, lhs, "lhs");
  checkFloat(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  if (lhs.rank() < 2 || lhs.rank() != rhs.rank())
    fail(op, "operands need one rank >= 2, got lhs " +
                 shapeToString(lhs.shape()) + " and rhs " +
                 shapeToString(rhs.shape()));
  Shape batchShape(lhs.shape().begin(), lhs.shape().end() - 2);
  if (!std::equal(batchShape.begin(), batchShape.end(), rhs.shape().begin()))
    fail(op, "batch dimensions differ: lhs " + shapeToString(lhs.shape()) +
                 " and rhs " + shapeToString(rhs.shape()));
  MatrixDims a = lastTwo(lhs, transposeLhs), b = lastTwo(rhs, transposeRhs);
  if (a.cols != b.rows)
    fail(op, "contracting sizes differ: " + describe("lhs", lhs, transposeLhs) +
                 " gives K=" + std::to_string(a.cols) + ", " +
                 describe("rhs", rhs, transposeRhs) +
                 " gives K=" + std::to_string(b.rows));
  Shape resultShape = batchShape;
  resultShape.push_back(a.rows);
  resultShape.push_back(b.cols);
  return fromCompute(contract(op, lhs, rhs, transposeLhs, transposeRhs,
                              numElements(batchShape), a.rows, b.cols, a.cols,
                              b.rows * b.cols, resultShape),
                     lhs.dtype());
}

Tensor rtxrt::linear(const Tensor &input, const Tensor &weight,
                     const Tensor &bias) {
  const std::string op = "rtx.linear";
  checkFloat(op, input, "input");
  checkFloat(op, weight, "weight");
  checkSameDType(op, input, "input", weight, "weight");
  if (input.rank() < 1 || weight.rank() != 2)
    fail(op, "expected input [..., in] and weight [out, in], got input " +
                 shapeToString(input.shape()) + " and weight " +
                 shapeToString(weight.shape()));
  int64_t in = input.dim(input.rank() - 1);
  int64_t out = weight.dim(0);
  if (weight.dim(1) != in)
    fail(op, "weight " + shapeToString(weight.shape()) +
                 " does not take input features " + std::to_string(in) +
                 " of input " + shapeToString(input.shape()));
  if (bias.defined()) {
    checkSameDType(op, input, "input", bias, "bias");
    if (bias.shape() != Shape{out})
      fail(op, "bias " + shapeToString(bias.shape()) + " must be [" +
                   std::to_string(out) + "]");
  }
  Shape resultShape = input.shape();
  resultShape.back() = out;
  int64_t tokens =
      numElements(Shape(input.shape().begin(), input.shape().end() - 1));
  // All tokens form one [T, in] x [out, in]^T product.
  Tensor y = contract(op, input, weight, false, true, 1, tokens, out, in, 0,
                      resultShape);
  if (!bias.defined())
    return fromCompute(y, input.dtype());
  // The bias is added before the one rounding to bf16/f16; y is a fresh
  // buffer, so adding in place is safe.
  Tensor b = toCompute(bias);
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *py = y.data<T>();
    const T *pb = b.data<T>();
    parallelFor(tokens, rowGrain(out), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        for (int64_t j = 0; j < out; ++j)
          py[t * out + j] += pb[j];
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}
