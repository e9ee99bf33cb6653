//===- Contraction.cu - matmul, batch_matmul, linear on cuBLAS ------------===//
//
// All contractions go through gemmBatched(): cuBLAS's strided-batched GEMM
// under CUDA (row-major C = op(A) op(B) is column-major C^T = op(B)^T
// op(A)^T, so the operands are passed swapped), and the CPU kernels'
// deterministic GEMM in the emulation. f32 GEMMs use strict f32 arithmetic;
// RTX_ALLOW_TF32=1 lets cuBLAS use TF32 tensor cores (about 1e-3 relative
// error, so losses then no longer match the CPU run to fp32 tolerance).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"

#include <cstdlib>

#if defined(__CUDACC__)
#include <cublas_v2.h>
#else
#include "../kernels/Blas.h"
#endif

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkBatchMatmulArguments;
using rtxrt::detail::checkLinearArguments;
using rtxrt::detail::checkMatmulArguments;
using rtxrt::detail::ContractionDims;
using rtxrt::detail::fail;

namespace {
/// C = beta * C for every product: what BLAS computes when k = 0 (an empty
/// sum). cuBLAS rejects the lda/ldb of 0 that k = 0 gives, so both builds
/// handle it here, the same way.
template <typename T>
void scaleByBeta(int64_t m, int64_t n, T beta, T *c, int64_t ldc,
                 int64_t strideC, int64_t batch) {
  forEach(
      batch * m * n, RTX_GPU_BODY(int64_t i) {
        int64_t b = i / (m * n), r = (i / n) % m, j = i % n;
        c[b * strideC + r * ldc + j] *= beta;
      });
}
} // namespace

#if defined(__CUDACC__)
namespace {
void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error ") + std::to_string(status) + " in " +
                what);
}

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created;
    checkBlas(cublasCreate(&created), "cublasCreate");
    checkBlas(cublasSetStream(created, stream()), "cublasSetStream");
    return created;
  }();
  return h;
}

/// Strict f32 unless RTX_ALLOW_TF32=1 allows TF32 tensor cores (~1e-3
/// relative error); f64 stays f64.
cublasComputeType_t computeType(bool f64) {
  static const bool tf32 = [] {
    const char *allow = std::getenv("RTX_ALLOW_TF32");
    return allow && std::string(allow) == "1";
  }();
  if (f64)
    return CUBLAS_COMPUTE_64F;
  return tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}
} // namespace

template <typename T>
void gpu::detail::gemmBatched(bool transA, bool transB, int64_t m, int64_t n,
                              int64_t k, T alpha, const T *a, int64_t lda,
                              int64_t strideA, const T *b, int64_t ldb,
                              int64_t strideB, T beta, T *c, int64_t ldc,
                              int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0)
    return scaleByBeta(m, n, beta, c, ldc, strideC, batch);
  cudaDataType type = sizeof(T) == 8 ? CUDA_R_64F : CUDA_R_32F;
  cublasComputeType_t compute = computeType(sizeof(T) == 8);
  checkBlas(cublasGemmStridedBatchedEx(
                handle(), transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                transA ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                static_cast<int>(m), static_cast<int>(k), &alpha, b, type,
                static_cast<int>(ldb), strideB, a, type, static_cast<int>(lda),
                strideA, &beta, c, type, static_cast<int>(ldc), strideC,
                static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
}
#else
template <typename T>
void gpu::detail::gemmBatched(bool transA, bool transB, int64_t m, int64_t n,
                              int64_t k, T alpha, const T *a, int64_t lda,
                              int64_t strideA, const T *b, int64_t ldb,
                              int64_t strideB, T beta, T *c, int64_t ldc,
                              int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0)
    return scaleByBeta(m, n, beta, c, ldc, strideC, batch);
  for (int64_t i = 0; i < batch; ++i) {
    rtxrt::detail::gemm(transA, transB, m, n, k, alpha, a + i * strideA, lda,
                        b + i * strideB, ldb, beta, c + i * strideC, ldc);
  }
}
#endif

template void gpu::detail::gemmBatched<float>(bool, bool, int64_t, int64_t,
                                              int64_t, float, const float *,
                                              int64_t, int64_t, const float *,
                                              int64_t, int64_t, float, float *,
                                              int64_t, int64_t, int64_t);
template void gpu::detail::gemmBatched<double>(bool, bool, int64_t, int64_t,
                                               int64_t, double, const double *,
                                               int64_t, int64_t, const double *,
                                               int64_t, int64_t, double,
                                               double *, int64_t, int64_t,
                                               int64_t);

namespace {

/// out[b] = op(lhs[b]) op(rhs[b]); rhsBatchStride 0 shares one rhs.
template <typename T>
void contractT(const Tensor &a, const Tensor &b, Tensor &out, bool transA,
               bool transB, int64_t batch, int64_t m, int64_t n, int64_t k,
               int64_t rhsBatchStride) {
  gemmBatched<T>(transA, transB, m, n, k, T(1), static_cast<const T *>(a.raw()),
                 transA ? m : k, m * k, static_cast<const T *>(b.raw()),
                 transB ? k : n, rhsBatchStride, T(0),
                 static_cast<T *>(out.raw()), n, m * n, batch);
}

Tensor contract(const Tensor &lhs, const Tensor &rhs, bool transA, bool transB,
                const ContractionDims &d) {
  Tensor a = toCompute(lhs), b = toCompute(rhs);
  Tensor out = zeros(d.resultShape, a.dtype());
  if (a.dtype() == DType::F64)
    contractT<double>(a, b, out, transA, transB, d.batch, d.m, d.n, d.k,
                      d.rhsBatchStride);
  else
    contractT<float>(a, b, out, transA, transB, d.batch, d.m, d.n, d.k,
                     d.rhsBatchStride);
  return out;
}

template <typename T> void addBiasT(Tensor &y, const Tensor &bias) {
  T *py = static_cast<T *>(y.raw());
  const T *pb = static_cast<const T *>(bias.raw());
  int64_t width = bias.numel();
  forEach(
      y.numel(), RTX_GPU_BODY(int64_t i) { py[i] += pb[i % width]; });
}

} // namespace

Tensor gpu::matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs) {
  const std::string op = "rtx.matmul";
  ContractionDims dims =
      checkMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
  return fromCompute(contract(lhs, rhs, transposeLhs, transposeRhs, dims),
                     lhs.dtype());
}

Tensor gpu::batchMatmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                        bool transposeRhs) {
  const std::string op = "rtx.batch_matmul";
  ContractionDims dims =
      checkBatchMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
  return fromCompute(contract(lhs, rhs, transposeLhs, transposeRhs, dims),
                     lhs.dtype());
}

Tensor gpu::linear(const Tensor &input, const Tensor &weight,
                   const Tensor &bias) {
  const std::string op = "rtx.linear";
  ContractionDims dims = checkLinearArguments(op, input, weight, bias);
  checkOnGpu(op, input, "input");
  checkOnGpu(op, weight, "weight");
  if (bias.defined())
    checkOnGpu(op, bias, "bias");
  Tensor y = contract(input, weight, false, true, dims);
  if (bias.defined()) {
    Tensor b = toCompute(bias);
    if (y.dtype() == DType::F64)
      addBiasT<double>(y, b);
    else
      addBiasT<float>(y, b);
  }
  return fromCompute(y, input.dtype());
}
