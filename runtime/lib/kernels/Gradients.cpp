//===- Gradients.cpp - unary_grad, softmax_grad, rope_grad, pad -----------===//
//
// The backward kernels that are elementwise or row-wise like their forward
// op: each output element (or row) is computed by one thread from its own
// inputs, so results do not depend on the thread count. Row sums accumulate
// in double in a fixed order (laneSum), as in the forward kernels.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"
#include "ShapeViews.h"

#include <cmath>
#include <cstring>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

const char *unaryGradName(UnaryFn fn) {
  switch (fn) {
  case UnaryFn::Exp:
    return "rtx.unary_grad exp";
  case UnaryFn::Log:
    return "rtx.unary_grad log";
  case UnaryFn::Sqrt:
    return "rtx.unary_grad sqrt";
  case UnaryFn::Rsqrt:
    return "rtx.unary_grad rsqrt";
  case UnaryFn::Tanh:
    return "rtx.unary_grad tanh";
  case UnaryFn::Sigmoid:
    return "rtx.unary_grad sigmoid";
  case UnaryFn::Relu:
    return "rtx.unary_grad relu";
  case UnaryFn::Silu:
    return "rtx.unary_grad silu";
  case UnaryFn::Gelu:
    return "rtx.unary_grad gelu";
  case UnaryFn::GeluTanh:
    return "rtx.unary_grad gelu_tanh";
  }
  return "rtx.unary_grad";
}

/// dx[i] = f(x[i], dy[i]) over n elements, in parallel chunks.
template <typename T, typename F>
void gradElements(const T *x, const T *dy, T *dx, int64_t n, F f) {
  parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dx[i] = f(x[i], dy[i]);
  });
}

/// g * f'(x) by runtime/lib/common/ElementMath.h's derivatives (shared
/// with the GPU kernels), one loop per function.
template <typename T>
void unaryGradLoop(UnaryFn fn, const T *x, const T *dy, T *dx, int64_t n) {
  math::visitUnaryFn(fn, [&](auto f) {
    using F = decltype(f);
    gradElements(x, dy, dx, n, [](T v, T g) { return F::grad(v, g); });
  });
}

/// out[idx + low] = in[idx] on raw elements of type E, zeros elsewhere
/// (`out` starts zeroed). One input row (last dimension) per work item.
template <typename E>
void padTyped(const E *in, E *out, const Shape &inShape, const Shape &outShape,
              const std::vector<int64_t> &low) {
  int64_t rank = static_cast<int64_t>(inShape.size());
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t last = inShape.back();
  int64_t rows = last ? numElements(inShape) / last : 0;
  parallelFor(rows, rowGrain(last), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t offset = low[rank - 1], rem = r;
      for (int64_t d = rank - 2; d >= 0; --d) {
        offset += (rem % inShape[d] + low[d]) * outStrides[d];
        rem /= inShape[d];
      }
      std::memcpy(out + offset, in + r * last, last * sizeof(E));
    }
  });
}

} // namespace

Tensor rtxrt::unaryGrad(UnaryFn fn, const Tensor &input,
                        const Tensor &resultGrad) {
  const std::string op = unaryGradName(fn);
  checkElementwisePair(op, input, "input", resultGrad, "result_grad");
  Tensor x = toCompute(input), dy = toCompute(resultGrad);
  Tensor dx = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    unaryGradLoop<T>(fn, x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
    return 0;
  });
  return fromCompute(dx, input.dtype());
}

Tensor rtxrt::softmaxGrad(const Tensor &result, const Tensor &resultGrad,
                          int64_t dim) {
  const std::string op = "rtx.softmax_grad";
  checkFloat(op, result, "result");
  checkFloat(op, resultGrad, "result_grad");
  checkSameDType(op, result, "result", resultGrad, "result_grad");
  checkSameShape(op, result, "result", resultGrad, "result_grad");
  if (result.rank() < 1)
    fail(op, "result must have rank >= 1, got a scalar");
  int64_t axis = normalizeDim(op, dim, result.rank());
  // View as [outer, n, inner] as rtx.softmax does; one lane per softmax.
  int64_t n = result.dim(axis);
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < result.rank(); ++i)
    inner *= result.dim(i);
  int64_t lanes = n ? result.numel() / n : 0;
  Tensor y = toCompute(result), dy = toCompute(resultGrad);
  Tensor dx = Tensor::uninitialized(result.shape(), y.dtype());
  dispatchCompute(result.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *py = y.data<T>(), *pdy = dy.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(lanes, rowGrain(n), [&](int64_t begin, int64_t end) {
      for (int64_t lane = begin; lane < end; ++lane) {
        int64_t base = (lane / inner) * n * inner + lane % inner;
        softmaxGradRow(py + base, pdy + base, pdx + base, n, inner);
      }
    });
    return 0;
  });
  return fromCompute(dx, result.dtype());
}

Tensor rtxrt::ropeGrad(const Tensor &resultGrad, double theta, int64_t offset) {
  const std::string op = "rtx.rope_grad";
  checkRopeInput(op, resultGrad, "result_grad", theta);
  int64_t s = resultGrad.dim(2), d = resultGrad.dim(3);
  int64_t half = d / 2;
  int64_t heads = resultGrad.dim(0) * resultGrad.dim(1);
  std::vector<double> cosTable, sinTable;
  ropeAngles(s, d, theta, offset, cosTable, sinTable);
  Tensor dy = toCompute(resultGrad);
  Tensor dx = Tensor::uninitialized(resultGrad.shape(), dy.dtype());
  dispatchCompute(resultGrad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> c(cosTable.begin(), cosTable.end());
    std::vector<T> sn(sinTable.begin(), sinTable.end());
    const T *pdy = dy.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(heads * s, rowGrain(d), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t p = row % s;
        const T *gr = pdy + row * d;
        T *xr = pdx + row * d;
        const T *cr = c.data() + p * half;
        const T *sr = sn.data() + p * half;
        // The transpose of rope's rotation: (g1, g2) ->
        // (g1 cos + g2 sin, g2 cos - g1 sin).
        for (int64_t i = 0; i < half; ++i) {
          T g1 = gr[i], g2 = gr[i + half];
          xr[i] = g1 * cr[i] + g2 * sr[i];
          xr[i + half] = g2 * cr[i] - g1 * sr[i];
        }
      }
    });
    return 0;
  });
  return fromCompute(dx, resultGrad.dtype());
}

Tensor rtxrt::pad(const Tensor &input, const std::vector<int64_t> &low,
                  const std::vector<int64_t> &high) {
  const std::string op = "rtx.pad";
  checkDefined(op, input, "input");
  int64_t rank = input.rank();
  Shape outShape = padShape(op, input, low, high);
  Tensor out(outShape, input.dtype());
  if (input.numel() == 0)
    return out;
  if (rank == 0) {
    std::memcpy(out.raw(), input.raw(), input.nbytes());
    return out;
  }
  switch (dtypeSize(input.dtype())) {
  case 1:
    padTyped(static_cast<const uint8_t *>(input.raw()),
             static_cast<uint8_t *>(out.raw()), input.shape(), outShape, low);
    break;
  case 2:
    padTyped(static_cast<const uint16_t *>(input.raw()),
             static_cast<uint16_t *>(out.raw()), input.shape(), outShape, low);
    break;
  case 4:
    padTyped(static_cast<const uint32_t *>(input.raw()),
             static_cast<uint32_t *>(out.raw()), input.shape(), outShape, low);
    break;
  default:
    padTyped(static_cast<const uint64_t *>(input.raw()),
             static_cast<uint64_t *>(out.raw()), input.shape(), outShape, low);
    break;
  }
  return out;
}
