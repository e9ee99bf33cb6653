//===- Contraction.cpp - matmul, batch_matmul, linear ---------------------===//
//
// All three reduce to row-major GEMM calls on OpenBLAS. bf16/f16 operands are
// widened to f32 first (OpenBLAS 0.3.21 has no bf16 GEMM in Debian's build)
// and the result is rounded back, as the header promises. rtx.gemm_epilogue
// is its unfused kernels (GemmEpilogue.h).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "Blas.h"
#include "GemmEpilogue.h"
#include "KernelUtils.h"

#include <climits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

void checkBlasSize(const std::string &op, int64_t value) {
  if (value > INT_MAX)
    fail(op, "dimension " + std::to_string(value) +
                 " exceeds what a 32-bit BLAS accepts");
}

/// out[b] = op(lhs[b]) * op(rhs[b]) for every batch index b, in the compute
/// type (callers round to bf16/f16 once, after any epilogue).
/// `rhsBatchStride` is 0 when every batch uses the same rhs (linear).
Tensor contract(const std::string &op, const Tensor &lhs, const Tensor &rhs,
                bool transLhs, bool transRhs, const ContractionDims &dims) {
  int64_t batch = dims.batch, m = dims.m, n = dims.n, k = dims.k;
  int64_t rhsBatchStride = dims.rhsBatchStride;
  const Shape &resultShape = dims.resultShape;
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

} // namespace

Tensor rtxrt::matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                     bool transposeRhs) {
  const std::string op = "rtx.matmul";
  ContractionDims dims =
      checkMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  return fromCompute(contract(op, lhs, rhs, transposeLhs, transposeRhs, dims),
                     lhs.dtype());
}

Tensor rtxrt::batchMatmul(const Tensor &lhs, const Tensor &rhs,
                          bool transposeLhs, bool transposeRhs) {
  const std::string op = "rtx.batch_matmul";
  ContractionDims dims =
      checkBatchMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  return fromCompute(contract(op, lhs, rhs, transposeLhs, transposeRhs, dims),
                     lhs.dtype());
}

Tensor rtxrt::linear(const Tensor &input, const Tensor &weight,
                     const Tensor &bias) {
  const std::string op = "rtx.linear";
  ContractionDims dims = checkLinearArguments(op, input, weight, bias);
  Tensor y = contract(op, input, weight, false, true, dims);
  if (!bias.defined())
    return fromCompute(y, input.dtype());
  int64_t tokens = dims.m, out = dims.n;
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

namespace {
/// The CPU kernels, for unfusedGemmEpilogue.
struct CpuKernels {
  static Tensor matmul(const Tensor &a, const Tensor &b, bool ta, bool tb) {
    return rtxrt::matmul(a, b, ta, tb);
  }
  static Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b) {
    return rtxrt::linear(x, w, b);
  }
  static Tensor unary(UnaryKind kind, const Tensor &x) {
    return rtxrt::unary(kind, x);
  }
  static Tensor unaryGrad(UnaryFn fn, const Tensor &x, const Tensor &dy) {
    return rtxrt::unaryGrad(fn, x, dy);
  }
  static Tensor reduce(ReduceKind kind, const Tensor &x,
                       const std::vector<int64_t> &dims, bool keepdim) {
    return rtxrt::reduce(kind, x, dims, keepdim);
  }
  static Tensor reshape(const Tensor &x, const Shape &shape) {
    return rtxrt::reshape(x, shape);
  }
  static Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
    return rtxrt::transpose(x, perm);
  }
};
} // namespace

std::vector<Tensor> rtxrt::gemmEpilogue(GemmEpilogue epilogue,
                                        const Tensor &lhs, const Tensor &rhs,
                                        bool transposeLhs, bool transposeRhs,
                                        const Tensor &bias,
                                        const Tensor &preActivation) {
  GemmEpilogueDims dims = checkGemmEpilogueArguments(
      "rtx.gemm_epilogue", epilogue, lhs, rhs, transposeLhs, transposeRhs, bias,
      preActivation);
  return unfusedGemmEpilogue<CpuKernels>(epilogue, lhs, rhs, transposeLhs,
                                         transposeRhs, bias, preActivation,
                                         dims);
}
