//===- Blas.h - deterministic row-major GEMM over CBLAS ---------*- C++ -*-===//
//
// Private to librtxrt. OpenBLAS's own threading is not deterministic: with a
// different thread count it partitions the matrices differently and some
// elements then go through other micro-kernel paths, changing the last bits
// (seen here with OpenBLAS 0.3.21). So OpenBLAS always runs on one thread,
// and rtxrt parallelises over a grid of output tiles that depends only on
// the matrix shape: each element is computed by the same single-threaded
// call whatever the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_KERNELS_BLAS_H
#define RTXRT_LIB_KERNELS_BLAS_H

#include <cstdint>

namespace rtxrt {
namespace detail {

/// C[M,N] = alpha * op(A) * op(B) + beta * C, all row-major, with `lda`,
/// `ldb`, `ldc` the stored row lengths. Parallel over a fixed tile grid; runs
/// serially when called from inside a parallel region.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

/// Makes sure the BLAS library itself runs single-threaded (cheap to call
/// often; someone else in the process may have changed it).
void pinBlasToOneThread();

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_KERNELS_BLAS_H
