//===- Blas.cpp - deterministic row-major GEMM over CBLAS -----------------===//
//
// See Blas.h for why the tiles are fixed by the shape. Tiles are at least
// kMinTile wide (and multiples of 64, a multiple of every OpenBLAS
// micro-kernel unroll) so that each single-threaded call still runs at full
// speed, and there are up to 4 x 4 of them so that several cores find work.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"

#include "KernelUtils.h"

#include <cblas.h>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

/// Below this a tile's GEMM loses efficiency to packing and edges.
constexpr int64_t kMinTile = 256;

/// Tile length along a dimension of size `extent`: a function of the extent
/// only.
int64_t tileLength(int64_t extent) {
  if (extent <= kMinTile)
    return std::max<int64_t>(extent, 1);
  int64_t quarter = (extent + 3) / 4;
  return std::max<int64_t>(kMinTile, (quarter + 63) / 64 * 64);
}

void blasCall(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, int64_t lda, const float *b,
              int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void blasCall(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              double alpha, const double *a, int64_t lda, const double *b,
              int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

template <typename T>
void tiledGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
               T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
               T beta, T *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  pinBlasToOneThread();
  int64_t tm = tileLength(m), tn = tileLength(n);
  int64_t rowTiles = (m + tm - 1) / tm, colTiles = (n + tn - 1) / tn;
  parallelFor(rowTiles * colTiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t i0 = (t / colTiles) * tm, j0 = (t % colTiles) * tn;
      int64_t mi = std::min(tm, m - i0), nj = std::min(tn, n - j0);
      // Tile origins inside the stored (pre-transpose) operands.
      const T *at = transA ? a + i0 : a + i0 * lda;
      const T *bt = transB ? b + j0 * ldb : b + j0;
      blasCall(transA, transB, mi, nj, k, alpha, at, lda, bt, ldb, beta,
               c + i0 * ldc + j0, ldc);
    }
  });
}

} // namespace

void rtxrt::detail::pinBlasToOneThread() {
#ifdef RTXRT_HAVE_OPENBLAS
  if (openblas_get_num_threads() != 1)
    openblas_set_num_threads(1);
#endif
}

void rtxrt::detail::gemm(bool transA, bool transB, int64_t m, int64_t n,
                         int64_t k, float alpha, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float beta, float *c,
                         int64_t ldc) {
  tiledGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void rtxrt::detail::gemm(bool transA, bool transB, int64_t m, int64_t n,
                         int64_t k, double alpha, const double *a, int64_t lda,
                         const double *b, int64_t ldb, double beta, double *c,
                         int64_t ldc) {
  tiledGemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
