//===- Gemm.h - batched row-major GEMM on the GPU ---------------*- C++ -*-===//
//
// Private to the GPU runtime; used by the contractions and by attention.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_GEMM_H
#define RTXRT_LIB_GPU_GEMM_H

#include <cstdint>

namespace rtxrt {
namespace gpu {
namespace detail {

/// For every b < batch: C_b[M,N] = alpha op(A_b) op(B_b) + beta C_b, all
/// row-major device matrices with stored row lengths lda/ldb/ldc, matrix b
/// starting `stride` elements after matrix b-1 (stride 0 shares one).
/// T is float or double.
template <typename T>
void gemmBatched(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 T alpha, const T *a, int64_t lda, int64_t strideA, const T *b,
                 int64_t ldb, int64_t strideB, T beta, T *c, int64_t ldc,
                 int64_t strideC, int64_t batch);

} // namespace detail
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_GEMM_H
