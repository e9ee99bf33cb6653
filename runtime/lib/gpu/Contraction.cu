//===- Contraction.cu - matmul, batch_matmul, linear, gemm_epilogue -------===//
//
// Fast path (a CUDA build with gpu::useFastKernels()): every contraction is
// one cuBLASLt matmul on the operands' own element type (fast/CublasLt.h):
// bf16/f16 on the tensor cores with f32 accumulation, no f32 copies; a
// linear's bias and rtx.gemm_epilogue's epilogues fused into it.
//
// Portable path (the reference, and the host emulation): everything goes
// through gemmBatched() on the compute type (bf16/f16 widened to f32 first):
// cuBLAS's strided-batched GEMM under CUDA (row-major C = op(A) op(B) is
// column-major C^T = op(B)^T op(A)^T, so the operands are passed swapped),
// the CPU kernels' deterministic GEMM in the emulation; rtx.gemm_epilogue as
// the unfused kernels (kernels/GemmEpilogue.h). f32 GEMMs are strict f32
// unless gpu::setTf32(true) allows TF32 tensor cores (about 1e-3 relative
// error, so losses then no longer match the CPU run to fp32 tolerance).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Portable.h"

#include "../kernels/GemmEpilogue.h"
#include "../kernels/KernelUtils.h"

#if defined(__CUDACC__)
#include "fast/CublasLt.h"

#include <cublas_v2.h>

namespace lt = rtxrt::gpu::fast;
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
using rtxrt::detail::GemmEpilogueDims;

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

/// Strict f32 unless gpu::setTf32(true) allows TF32 tensor cores (~1e-3
/// relative error); f64 stays f64.
cublasComputeType_t computeType(bool f64) {
  if (f64)
    return CUBLAS_COMPUTE_64F;
  return gpu::tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
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
  if (useFastKernels()) {
    lt::LtGemm g;
    g.dtype = sizeof(T) == 8 ? DType::F64 : DType::F32;
    g.transA = transA;
    g.transB = transB;
    g.m = m, g.n = n, g.k = k;
    g.a = a, g.lda = lda, g.strideA = strideA;
    g.b = b, g.ldb = ldb, g.strideB = strideB;
    g.c = c, g.ldc = ldc, g.strideC = strideC;
    g.batch = batch;
    g.alpha = alpha, g.beta = beta;
    if (lt::gemm(g))
      return;
    // No cuBLASLt algorithm (not expected for a plain GEMM): cuBLAS below.
  }
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

/// The portable contraction, in the compute type (f32 for bf16/f16).
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

/// The portable paths of the three contractions.
Tensor portableContraction(const Tensor &lhs, const Tensor &rhs, bool transA,
                           bool transB, const ContractionDims &dims) {
  return fromCompute(contract(lhs, rhs, transA, transB, dims), lhs.dtype());
}

Tensor portableLinear(const Tensor &input, const Tensor &weight,
                      const Tensor &bias, const ContractionDims &dims) {
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

#if defined(__CUDACC__)
/// The product of the fast path on the operands' own type, as a cuBLASLt
/// problem (lda/ldb are the stored row lengths; rhsBatchStride 0 shares one
/// rhs). `out` is [batch, m, n].
lt::LtGemm ltProblem(const Tensor &lhs, const Tensor &rhs, Tensor &out,
                     bool transA, bool transB, const ContractionDims &d) {
  lt::LtGemm g;
  g.dtype = lhs.dtype();
  g.transA = transA;
  g.transB = transB;
  g.m = d.m, g.n = d.n, g.k = d.k;
  g.a = lhs.raw(), g.lda = transA ? d.m : d.k, g.strideA = d.m * d.k;
  g.b = rhs.raw(), g.ldb = transB ? d.k : d.n, g.strideB = d.rhsBatchStride;
  g.c = out.raw(), g.ldc = d.n, g.strideC = d.m * d.n;
  g.batch = d.batch;
  return g;
}

/// Fast path of matmul, batch_matmul and linear (bias: none, or a bias of
/// the operands' type fused as CUBLASLT_EPILOGUE_BIAS). Undefined when it
/// does not apply: mixed element types, a bias over a batch or over an
/// empty sum (k = 0: the result is the bias, which the portable path
/// writes), or no cuBLASLt algorithm.
Tensor fastContraction(const Tensor &lhs, const Tensor &rhs, bool transA,
                       bool transB, const ContractionDims &dims,
                       const Tensor &bias = Tensor()) {
  bool biasFits = !bias.defined() || (bias.dtype() == lhs.dtype() &&
                                      dims.batch == 1 && dims.k > 0);
  if (!gpu::useFastKernels() || rhs.dtype() != lhs.dtype() || !biasFits)
    return Tensor();
  // cuBLASLt refuses empty problems: an empty sum is zeros.
  if (dims.k == 0)
    return zeros(dims.resultShape, lhs.dtype());
  Tensor out = empty(dims.resultShape, lhs.dtype());
  if (out.numel() == 0)
    return out;
  lt::LtGemm g = ltProblem(lhs, rhs, out, transA, transB, dims);
  if (bias.defined()) {
    g.epilogue = lt::LtEpilogue::Bias;
    g.bias = const_cast<void *>(bias.raw());
  }
  return lt::gemm(g) ? out : Tensor();
}
#endif

} // namespace

Tensor gpu::matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs) {
  const std::string op = "rtx.matmul";
  ContractionDims dims =
      checkMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
#if defined(__CUDACC__)
  if (Tensor out = fastContraction(lhs, rhs, transposeLhs, transposeRhs, dims);
      out.defined())
    return out;
#endif
  return portableContraction(lhs, rhs, transposeLhs, transposeRhs, dims);
}

Tensor gpu::batchMatmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                        bool transposeRhs) {
  const std::string op = "rtx.batch_matmul";
  ContractionDims dims =
      checkBatchMatmulArguments(op, lhs, rhs, transposeLhs, transposeRhs);
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
#if defined(__CUDACC__)
  if (Tensor out = fastContraction(lhs, rhs, transposeLhs, transposeRhs, dims);
      out.defined())
    return out;
#endif
  return portableContraction(lhs, rhs, transposeLhs, transposeRhs, dims);
}

Tensor gpu::linear(const Tensor &input, const Tensor &weight,
                   const Tensor &bias) {
  const std::string op = "rtx.linear";
  ContractionDims dims = checkLinearArguments(op, input, weight, bias);
  checkOnGpu(op, input, "input");
  checkOnGpu(op, weight, "weight");
  if (bias.defined())
    checkOnGpu(op, bias, "bias");
#if defined(__CUDACC__)
  if (Tensor out = fastContraction(input, weight, false, true, dims, bias);
      out.defined())
    return out;
#endif
  return portableLinear(input, weight, bias, dims);
}

//===----------------------------------------------------------------------===//
// rtx.gemm_epilogue
//===----------------------------------------------------------------------===//

namespace {

/// The GPU kernels, for unfusedGemmEpilogue (the portable path: the
/// unfused ops, exactly as the program without rtx-fuse-epilogues runs
/// them; their GEMMs still take the fast path when it is selected).
struct GpuKernels {
  static Tensor matmul(const Tensor &a, const Tensor &b, bool ta, bool tb) {
    return gpu::matmul(a, b, ta, tb);
  }
  static Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b) {
    return gpu::linear(x, w, b);
  }
  static Tensor unary(UnaryKind kind, const Tensor &x) {
    return gpu::unary(kind, x);
  }
  static Tensor unaryGrad(UnaryFn fn, const Tensor &x, const Tensor &dy) {
    return gpu::unaryGrad(fn, x, dy);
  }
  static Tensor reduce(ReduceKind kind, const Tensor &x,
                       const std::vector<int64_t> &dims, bool keepdim) {
    return gpu::reduce(kind, x, dims, keepdim);
  }
  static Tensor reshape(const Tensor &x, const Shape &shape) {
    return gpu::reshape(x, shape);
  }
  static Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
    return gpu::transpose(x, perm);
  }
};

#if defined(__CUDACC__)
/// The epilogues cuBLASLt computes: GELU in its tanh form only (the erf
/// form runs as the bias epilogue's linear and a GELU kernel, which is what
/// the portable path does), and the bias gradient of the lhs.
bool hasLtEpilogue(GemmEpilogue e, lt::LtEpilogue &out) {
  switch (e) {
  case GemmEpilogue::BiasGeluTanh:
    out = lt::LtEpilogue::GeluBias;
    return true;
  case GemmEpilogue::BiasGeluTanhAux:
    out = lt::LtEpilogue::GeluAuxBias;
    return true;
  case GemmEpilogue::DGeluTanh:
    out = lt::LtEpilogue::DGelu;
    return true;
  case GemmEpilogue::BiasGrad:
    out = lt::LtEpilogue::BGradB;
    return true;
  default:
    return false;
  }
}

/// rtx.gemm_epilogue as one cuBLASLt matmul with its epilogue; empty when
/// cuBLASLt does not cover it (then the portable path runs).
std::vector<Tensor> fastGemmEpilogue(GemmEpilogue epilogue, const Tensor &lhs,
                                     const Tensor &rhs, bool transA,
                                     bool transB, const Tensor &bias,
                                     const Tensor &pre,
                                     const GemmEpilogueDims &d) {
  lt::LtEpilogue ltEpilogue;
  if (!gpu::useFastKernels() || !hasLtEpilogue(epilogue, ltEpilogue) ||
      d.m == 0 || d.n == 0 || d.k == 0)
    return {};
  Tensor result = empty(d.resultShape, lhs.dtype());
  Tensor aux;
  ContractionDims dims{1, d.m, d.n, d.k, 0, d.resultShape};
  lt::LtGemm g = ltProblem(lhs, rhs, result, transA, transB, dims);
  g.epilogue = ltEpilogue;
  if (epilogue == GemmEpilogue::BiasGrad) {
    aux = empty({d.m}, lhs.dtype());
    g.bias = aux.raw();
  } else if (epilogueAddsBias(epilogue)) {
    g.bias = const_cast<void *>(bias.raw());
    if (epilogueReturnsAux(epilogue)) {
      aux = empty(d.resultShape, lhs.dtype());
      g.aux = aux.raw();
    }
  } else {
    g.aux = const_cast<void *>(pre.raw());
  }
  if (!lt::gemm(g))
    return {};
  if (aux.defined())
    return {result, aux};
  return {result};
}
#endif

} // namespace

std::vector<Tensor> gpu::gemmEpilogue(GemmEpilogue epilogue, const Tensor &lhs,
                                      const Tensor &rhs, bool transposeLhs,
                                      bool transposeRhs, const Tensor &bias,
                                      const Tensor &preActivation) {
  const std::string op = "rtx.gemm_epilogue";
  GemmEpilogueDims dims = rtxrt::detail::checkGemmEpilogueArguments(
      op, epilogue, lhs, rhs, transposeLhs, transposeRhs, bias, preActivation);
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
  if (bias.defined())
    checkOnGpu(op, bias, "bias");
  if (preActivation.defined())
    checkOnGpu(op, preActivation, "pre");
#if defined(__CUDACC__)
  std::vector<Tensor> fused =
      fastGemmEpilogue(epilogue, lhs, rhs, transposeLhs, transposeRhs, bias,
                       preActivation, dims);
  if (!fused.empty())
    return fused;
#endif
  return rtxrt::detail::unfusedGemmEpilogue<GpuKernels>(
      epilogue, lhs, rhs, transposeLhs, transposeRhs, bias, preActivation,
      dims);
}
