//===- NormalizationGrad.cpp - layernorm_grad, rmsnorm_grad ---------------===//
//
// dx is row-wise: one thread owns a row, recomputes its statistics in double
// in the forward's fixed order (laneSum) and writes the row's gradient.
//
// dscale and dbias sum over all rows. The rows are cut into blocks whose size
// depends on the shape only (kMaxBlocks at most); each block accumulates its
// own partial sums in double, row by row, and the partials are added in
// block order. So the result is the same with any number of threads.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

constexpr int64_t kMaxBlocks = 64;

/// A fixed cut of `rows` rows of length d into blocks.
struct RowBlocks {
  RowBlocks(int64_t rows, int64_t d) : rows(rows) {
    size = std::max(rowGrain(d), (rows + kMaxBlocks - 1) / kMaxBlocks);
    count = (rows + size - 1) / size;
  }
  int64_t begin(int64_t block) const { return block * size; }
  int64_t end(int64_t block) const {
    return std::min(rows, (block + 1) * size);
  }
  int64_t rows, size, count;
};

/// Sums the [blocks, d] partials over blocks, in block order, and returns
/// them rounded once to `dtype`.
Tensor sumBlocks(const std::vector<double> &partial, int64_t blocks, int64_t d,
                 DType dtype) {
  Tensor sum(Shape{d}, DType::F64);
  double *ps = sum.data<double>();
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t i = 0; i < d; ++i)
      ps[i] += partial[blk * d + i];
  return sum.to(dtype);
}

/// The scale in the input's compute type (it may have another dtype).
Tensor scaleInComputeType(const Tensor &scale, DType inputType) {
  DType c = computeType(inputType);
  return scale.dtype() == c ? scale : scale.to(c);
}

} // namespace

std::vector<Tensor> rtxrt::layerNormGrad(const Tensor &input,
                                         const Tensor &scale,
                                         const Tensor &resultGrad,
                                         double epsilon) {
  const std::string op = "rtx.layernorm_grad";
  int64_t d = checkNormGradArguments(op, input, scale, resultGrad);
  int64_t rows = d ? input.numel() / d : 0;
  RowBlocks blocks(rows, d);
  Tensor x = toCompute(input), dy = toCompute(resultGrad);
  Tensor g = scaleInComputeType(scale, input.dtype());
  Tensor dx = Tensor::uninitialized(input.shape(), x.dtype());
  std::vector<double> scalePartial(blocks.count * d, 0.0);
  std::vector<double> biasPartial(blocks.count * d, 0.0);
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pdy = dy.data<T>(), *pg = g.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(blocks.count, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> xhat(d);
      for (int64_t blk = begin; blk < end; ++blk) {
        double *ds = scalePartial.data() + blk * d;
        double *db = biasPartial.data() + blk * d;
        for (int64_t r = blocks.begin(blk); r < blocks.end(blk); ++r) {
          const T *xr = px + r * d, *dyr = pdy + r * d;
          T *dxr = pdx + r * d;
          // Mean and biased variance exactly as rtx.layernorm (two passes).
          double mean = laneSum(d, [&](int64_t i) { return double(xr[i]); }) /
                        static_cast<double>(d);
          double sq = laneSum(d, [&](int64_t i) {
            double c = xr[i] - mean;
            return c * c;
          });
          double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + epsilon);
          // With dxhat = dy * g:
          // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
          double *xh = xhat.data();
          for (int64_t i = 0; i < d; ++i)
            xh[i] = (xr[i] - mean) * rstd;
          double sumG = laneSum(d, [&](int64_t i) {
            return static_cast<double>(dyr[i]) * pg[i];
          });
          double sumGX = laneSum(d, [&](int64_t i) {
            return static_cast<double>(dyr[i]) * pg[i] * xh[i];
          });
          for (int64_t i = 0; i < d; ++i) {
            ds[i] += static_cast<double>(dyr[i]) * xh[i];
            db[i] += dyr[i];
          }
          double meanG = sumG / static_cast<double>(d);
          double meanGX = sumGX / static_cast<double>(d);
          for (int64_t i = 0; i < d; ++i)
            dxr[i] = T(rstd * (static_cast<double>(dyr[i]) * pg[i] - meanG -
                               xh[i] * meanGX));
        }
      }
    });
    return 0;
  });
  return {fromCompute(dx, input.dtype()),
          sumBlocks(scalePartial, blocks.count, d, scale.dtype()),
          sumBlocks(biasPartial, blocks.count, d, scale.dtype())};
}

std::vector<Tensor> rtxrt::rmsNormGrad(const Tensor &input, const Tensor &scale,
                                       const Tensor &resultGrad,
                                       double epsilon) {
  const std::string op = "rtx.rmsnorm_grad";
  int64_t d = checkNormGradArguments(op, input, scale, resultGrad);
  int64_t rows = d ? input.numel() / d : 0;
  RowBlocks blocks(rows, d);
  Tensor x = toCompute(input), dy = toCompute(resultGrad);
  Tensor g = scaleInComputeType(scale, input.dtype());
  Tensor dx = Tensor::uninitialized(input.shape(), x.dtype());
  std::vector<double> scalePartial(blocks.count * d, 0.0);
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pdy = dy.data<T>(), *pg = g.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(blocks.count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t blk = begin; blk < end; ++blk) {
        double *ds = scalePartial.data() + blk * d;
        for (int64_t r = blocks.begin(blk); r < blocks.end(blk); ++r) {
          const T *xr = px + r * d, *dyr = pdy + r * d;
          T *dxr = pdx + r * d;
          double sq = laneSum(
              d, [&](int64_t i) { return static_cast<double>(xr[i]) * xr[i]; });
          double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + epsilon);
          // y = x * rstd * g: dx = rstd * dy g - x rstd^3 mean(dy g x).
          double sumGX = laneSum(d, [&](int64_t i) {
            return static_cast<double>(dyr[i]) * pg[i] * xr[i];
          });
          for (int64_t i = 0; i < d; ++i)
            ds[i] += static_cast<double>(dyr[i]) * xr[i] * rstd;
          double k = rstd * rstd * rstd * sumGX / static_cast<double>(d);
          for (int64_t i = 0; i < d; ++i)
            dxr[i] = T(rstd * static_cast<double>(dyr[i]) * pg[i] - xr[i] * k);
        }
      }
    });
    return 0;
  });
  return {fromCompute(dx, input.dtype()),
          sumBlocks(scalePartial, blocks.count, d, scale.dtype())};
}
