//===- Reduction.cpp - reduce sum/mean/max/min ----------------------------===//
//
// The input is first permuted so that the reduced dimensions are trailing
// (no copy when they already are, or when they are all leading: then the
// columns are reduced in place, in the same order); then each of the O output
// elements reduces one contiguous row of R elements. A row is cut into blocks
// of a fixed size (kBlock), each block is reduced in index order, and the block
// results are combined in block order. The cut depends only on R, never on
// the thread count, so the result is the same with 1 or 64 threads, and a
// single long row still runs in parallel. Sums accumulate in double.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"
#include "ShapeViews.h"

#include <cmath>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

constexpr int64_t kBlock = kReduceBlock;

const char *reduceName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "rtx.reduce sum";
  case ReduceKind::Mean:
    return "rtx.reduce mean";
  case ReduceKind::Max:
    return "rtx.reduce max";
  case ReduceKind::Min:
    return "rtx.reduce min";
  }
  return "rtx.reduce";
}

/// max/min that propagate NaN, like torch.amax/amin.
inline double maxOf(double a, double b) {
  if (a != a)
    return a;
  return (b > a || b != b) ? b : a;
}
inline double minOf(double a, double b) {
  if (a != a)
    return a;
  return (b < a || b != b) ? b : a;
}

/// Reduces rows of a [rows, length] matrix; out[r] is the row's result.
template <typename T>
void reduceRows(ReduceKind kind, const T *x, int64_t rows, int64_t length,
                T *out) {
  int64_t blocks = (length + kBlock - 1) / kBlock;
  std::vector<double> partial(rows * blocks);
  bool isMax = kind == ReduceKind::Max, isMin = kind == ReduceKind::Min;
  parallelFor(rows * blocks,
              std::max<int64_t>(1, rowGrain(std::min(length, kBlock))),
              [&](int64_t begin, int64_t end) {
                for (int64_t item = begin; item < end; ++item) {
                  int64_t r = item / blocks, blk = item % blocks;
                  const T *p = x + r * length + blk * kBlock;
                  int64_t n = std::min(kBlock, length - blk * kBlock);
                  double acc;
                  if (isMax) {
                    acc = -std::numeric_limits<double>::infinity();
                    for (int64_t i = 0; i < n; ++i)
                      acc = maxOf(acc, p[i]);
                  } else if (isMin) {
                    acc = std::numeric_limits<double>::infinity();
                    for (int64_t i = 0; i < n; ++i)
                      acc = minOf(acc, p[i]);
                  } else {
                    acc = 0.0;
                    for (int64_t i = 0; i < n; ++i)
                      acc += p[i];
                  }
                  partial[item] = acc;
                }
              });
  for (int64_t r = 0; r < rows; ++r) {
    const double *p = partial.data() + r * blocks;
    double acc = p[0];
    for (int64_t blk = 1; blk < blocks; ++blk)
      acc = isMax   ? maxOf(acc, p[blk])
            : isMin ? minOf(acc, p[blk])
                    : acc + p[blk];
    if (kind == ReduceKind::Mean)
      acc /= static_cast<double>(length);
    out[r] = static_cast<T>(acc);
  }
}

/// Reduces the columns of a [length, cols] matrix: out[c] over rows r, the
/// same blocks and the same order per output as reduceRows on its
/// transpose, so the result is identical, but reading rows contiguously
/// (bias gradients sum [tokens, features] over tokens; transposing them first
/// was the costliest copy of a GPT-2 step). Threads split the columns.
template <typename T>
void reduceColumns(ReduceKind kind, const T *x, int64_t length, int64_t cols,
                   T *out) {
  int64_t blocks = (length + kBlock - 1) / kBlock;
  bool isMax = kind == ReduceKind::Max, isMin = kind == ReduceKind::Min;
  double start = isMax   ? -std::numeric_limits<double>::infinity()
                 : isMin ? std::numeric_limits<double>::infinity()
                         : 0.0;
  parallelFor(cols, rowGrain(length), [&](int64_t begin, int64_t end) {
    int64_t width = end - begin;
    std::vector<double> acc(width), total(width);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      std::fill(acc.begin(), acc.end(), start);
      int64_t rowEnd = std::min(length, (blk + 1) * kBlock);
      for (int64_t r = blk * kBlock; r < rowEnd; ++r) {
        const T *row = x + r * cols + begin;
        if (isMax)
          for (int64_t j = 0; j < width; ++j)
            acc[j] = maxOf(acc[j], row[j]);
        else if (isMin)
          for (int64_t j = 0; j < width; ++j)
            acc[j] = minOf(acc[j], row[j]);
        else
          for (int64_t j = 0; j < width; ++j)
            acc[j] += row[j];
      }
      for (int64_t j = 0; j < width; ++j)
        total[j] = blk == 0 ? acc[j]
                   : isMax  ? maxOf(total[j], acc[j])
                   : isMin  ? minOf(total[j], acc[j])
                            : total[j] + acc[j];
    }
    for (int64_t j = 0; j < width; ++j) {
      double v = total[j];
      if (kind == ReduceKind::Mean)
        v /= static_cast<double>(length);
      out[begin + j] = static_cast<T>(v);
    }
  });
}

} // namespace

Tensor rtxrt::reduce(ReduceKind kind, const Tensor &input,
                     const std::vector<int64_t> &dims, bool keepdim) {
  const std::string op = reduceName(kind);
  checkFloat(op, input, "input");
  int64_t rank = input.rank();
  std::vector<bool> reduced = reducedDims(op, input, dims);
  // Kept dimensions first, reduced ones last.
  std::vector<int64_t> perm;
  Shape resultShape;
  int64_t rows = 1, length = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      resultShape.push_back(input.dim(d));
      rows *= input.dim(d);
    } else if (keepdim) {
      resultShape.push_back(1);
    }
  for (int64_t d : dims) {
    perm.push_back(d);
    length *= input.dim(d);
  }
  if (!keepdim) {
    resultShape.clear();
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        resultShape.push_back(input.dim(d));
  }
  if (length == 0 && rows > 0 &&
      (kind == ReduceKind::Max || kind == ReduceKind::Min))
    fail(op, "cannot reduce an empty range: dims " + shapeToString(dims) +
                 " of input " + shapeToString(input.shape()));

  bool trailing = true;
  for (int64_t i = 0; i < rank; ++i)
    trailing = trailing && perm[i] == i;
  // Reduced dimensions that are all leading: reduce columns in place.
  bool leading = !trailing && !dims.empty();
  for (size_t i = 0; leading && i < dims.size(); ++i)
    leading = dims[i] == static_cast<int64_t>(i);
  Tensor x = toCompute(trailing || leading ? input : transpose(input, perm));
  Tensor y = Tensor::uninitialized(resultShape, x.dtype());
  if (rows == 0)
    return fromCompute(y, input.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T *py = y.data<T>();
    if (length == 0) { // sum of nothing is 0, mean of nothing is NaN
      T v =
          kind == ReduceKind::Sum ? T(0) : std::numeric_limits<T>::quiet_NaN();
      for (int64_t r = 0; r < rows; ++r)
        py[r] = v;
      return 0;
    }
    if (leading)
      reduceColumns<T>(kind, x.data<T>(), length, rows, py);
    else
      reduceRows<T>(kind, x.data<T>(), rows, length, py);
    return 0;
  });
  return fromCompute(y, input.dtype());
}
