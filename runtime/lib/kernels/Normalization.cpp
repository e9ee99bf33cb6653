//===- Normalization.cpp - layernorm, rmsnorm, softmax, rope --------------===//
//
// Row-wise kernels: one thread owns a whole row, and row statistics (mean,
// variance, sum of exponentials) are accumulated in double in a fixed order
// (laneSum), so they are both accurate and independent of the thread count.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::layerNorm(const Tensor &input, const Tensor &scale,
                        const Tensor &bias, double epsilon) {
  const std::string op = "rtx.layernorm";
  int64_t d = checkNormArguments(op, input, scale, bias);
  int64_t rows = d ? input.numel() / d : 0;
  Tensor x = toCompute(input), g = toCompute(scale);
  Tensor b = bias.defined() ? toCompute(bias) : Tensor();
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pg = g.data<T>();
    const T *pb = b.defined() ? b.template data<T>() : nullptr;
    T *py = y.data<T>();
    parallelFor(rows, rowGrain(d), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *xr = px + r * d;
        T *yr = py + r * d;
        double mean, rstd;
        normStatistics(xr, d, epsilon, true, mean, rstd);
        if (pb)
          for (int64_t i = 0; i < d; ++i)
            yr[i] = layerNormValue(xr[i], mean, rstd, pg[i], pb[i]);
        else
          for (int64_t i = 0; i < d; ++i)
            yr[i] = layerNormValue(xr[i], mean, rstd, pg[i]);
      }
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}

Tensor rtxrt::rmsNorm(const Tensor &input, const Tensor &scale,
                      double epsilon) {
  const std::string op = "rtx.rmsnorm";
  int64_t d = checkNormArguments(op, input, scale, Tensor());
  int64_t rows = d ? input.numel() / d : 0;
  Tensor x = toCompute(input), g = toCompute(scale);
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pg = g.data<T>();
    T *py = y.data<T>();
    parallelFor(rows, rowGrain(d), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T *xr = px + r * d;
        T *yr = py + r * d;
        double mean, rstd;
        normStatistics(xr, d, epsilon, false, mean, rstd);
        T s = T(rstd);
        for (int64_t i = 0; i < d; ++i)
          yr[i] = rmsNormValue(xr[i], s, pg[i]);
      }
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}

Tensor rtxrt::softmax(const Tensor &input, int64_t dim) {
  const std::string op = "rtx.softmax";
  checkFloat(op, input, "input");
  if (input.rank() < 1)
    fail(op, "input must have rank >= 1, got a scalar");
  int64_t axis = normalizeDim(op, dim, input.rank());
  // View as [outer, n, inner]; each (outer, inner) lane is one softmax.
  int64_t n = input.dim(axis);
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < input.rank(); ++i)
    inner *= input.dim(i);
  int64_t lanes = n ? input.numel() / n : 0;
  Tensor x = toCompute(input);
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    T *py = y.data<T>();
    parallelFor(lanes, rowGrain(n), [&](int64_t begin, int64_t end) {
      for (int64_t lane = begin; lane < end; ++lane) {
        int64_t base = (lane / inner) * n * inner + lane % inner;
        softmaxRow(px + base, py + base, n, inner);
      }
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}

Tensor rtxrt::rope(const Tensor &input, double theta, int64_t offset) {
  const std::string op = "rtx.rope";
  checkRopeInput(op, input, "input", theta);
  int64_t s = input.dim(2), d = input.dim(3);
  int64_t half = d / 2;
  int64_t heads = input.dim(0) * input.dim(1);
  std::vector<double> cosTable, sinTable;
  ropeAngles(s, d, theta, offset, cosTable, sinTable);
  Tensor x = toCompute(input);
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> c(cosTable.begin(), cosTable.end());
    std::vector<T> sn(sinTable.begin(), sinTable.end());
    const T *px = x.data<T>();
    T *py = y.data<T>();
    parallelFor(heads * s, rowGrain(d), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t p = row % s;
        const T *xr = px + row * d;
        T *yr = py + row * d;
        const T *cr = c.data() + p * half;
        const T *sr = sn.data() + p * half;
        // Rotate-half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin).
        for (int64_t i = 0; i < half; ++i) {
          T x1 = xr[i], x2 = xr[i + half];
          yr[i] = x1 * cr[i] - x2 * sr[i];
          yr[i + half] = x2 * cr[i] + x1 * sr[i];
        }
      }
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}
