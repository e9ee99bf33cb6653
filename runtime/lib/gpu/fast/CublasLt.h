//===- CublasLt.h - GEMMs on cuBLASLt, with fused epilogues -----*- C++ -*-===//
//
// Private to the CUDA build of the GPU runtime (the fast path; the host
// emulation never includes it). Every GEMM of the fast path is one
// cublasLtMatmul on the operands' own element type: bf16/f16 operands go to
// the tensor cores with f32 accumulation (CUBLAS_COMPUTE_32F), f32 stays
// strict f32 unless gpu::setTf32(true) (CUBLAS_COMPUTE_32F_FAST_TF32), f64
// is f64. Each distinct problem (shape, strides, type, epilogue, pointer
// alignment) has its matmul descriptor, layouts and heuristic's algorithm
// made once and cached; one 32 MiB workspace is allocated on first use. No
// call allocates, synchronises with the host or copies to an f32 buffer.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_CUBLASLT_H
#define RTXRT_LIB_GPU_FAST_CUBLASLT_H

#include "rtxrt/core/Tensor.h"

#include <cstdint>

namespace rtxrt {
namespace gpu {
namespace fast {

/// The cuBLASLt epilogues the runtime uses (CUBLASLT_EPILOGUE_*).
enum class LtEpilogue {
  Default,     ///< D = alpha op(A) op(B) + beta C
  Bias,        ///< + bias[n] on every row
  GeluBias,    ///< gelu_tanh(product + bias)
  GeluAuxBias, ///< the same, and aux = product + bias
  DGelu,       ///< product * gelu_tanh'(aux)
  BGradB,      ///< bias[m] = sum over k of op(A)[m, k] (our lhs)
};

/// One GEMM on row-major matrices, as gemmBatched (Gemm.h) describes them:
/// for every b < batch, C_b[m, n] = alpha op(A_b) op(B_b) + beta C_b, with
/// the stored row lengths lda/ldb/ldc and batch strides in elements. All
/// matrices (and bias, aux) have the element type `dtype`.
struct LtGemm {
  DType dtype = DType::F32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  void *c = nullptr;
  int64_t ldc = 0, strideC = 0;
  int64_t batch = 1;
  double alpha = 1, beta = 0;
  LtEpilogue epilogue = LtEpilogue::Default;
  /// Bias[n], read (Bias, GeluBias, GeluAuxBias); bias gradient [m],
  /// written (BGradB). Epilogues other than Default need batch 1.
  void *bias = nullptr;
  /// The pre-activation [m, n] (row-major, row length n): written by
  /// GeluAuxBias, read by DGelu.
  void *aux = nullptr;
};

/// Runs `g` on the calling thread's stream. Returns false, having done
/// nothing, when cuBLASLt offers no algorithm for it (an epilogue its
/// kernels do not cover at these shapes or alignments): the caller then
/// runs the portable kernels, which compute the same thing. Throws Error on
/// a cuBLASLt failure. m, n, k and batch must be positive.
bool gemm(const LtGemm &g);

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_CUBLASLT_H
