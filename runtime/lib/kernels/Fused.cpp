//===- Fused.cpp - the fused ops' CPU kernels -----------------------------===//
//
// The references of the fused ops (include/rtx/Dialect/RTX/IR/RTXFusedOps.td):
// each returns bit for bit what the kernels it replaces return, because it
// runs their own row functions (runtime/lib/common/ElementMath.h) in their
// order and rounds where they round (a bf16 sum is stored, then normalised).
// The GPU runs the same formulas (runtime/lib/gpu/Fused.cu) and fast kernels
// compared with them (runtime/lib/gpu/fast/Fused*.cu).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <vector>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

/// `value` rounded to `storage` and back (what storing a bf16/f16 result
/// and reading it again gives; f32/f64 unchanged).
template <typename T> T roundToStorage(T value, DType storage) {
  if (storage == DType::BF16)
    return T(bf16ToFloat(floatToBF16(float(value))));
  if (storage == DType::F16)
    return T(f16ToFloat(floatToF16(float(value))));
  return value;
}

/// add + layernorm (centred) or add + rmsnorm over rows of d elements.
std::vector<Tensor> addNorm(const std::string &op, const Tensor &input,
                            const Tensor &residual, const Tensor &scale,
                            const Tensor &bias, double epsilon,
                            bool layerNorm) {
  int64_t d = checkAddNormArguments(op, input, residual, scale, bias);
  int64_t rows = d ? input.numel() / d : 0;
  DType storage = input.dtype();
  Tensor x = toCompute(input), r = toCompute(residual), g = toCompute(scale);
  Tensor b = bias.defined() ? toCompute(bias) : Tensor();
  Tensor sum = Tensor::uninitialized(input.shape(), x.dtype());
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(storage, [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pr = r.data<T>(), *pg = g.data<T>();
    const T *pb = b.defined() ? b.template data<T>() : nullptr;
    T *ps = sum.data<T>(), *py = y.data<T>();
    parallelFor(rows, rowGrain(d), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T *xr = px + row * d, *rr = pr + row * d;
        T *sr = ps + row * d, *yr = py + row * d;
        // rtx.add's element, as rtx.add stores it.
        for (int64_t i = 0; i < d; ++i)
          sr[i] = roundToStorage(
              math::binaryValue(BinaryKind::Add, xr[i], rr[i]), storage);
        double mean, rstd;
        math::normStatistics(sr, d, epsilon, layerNorm, mean, rstd);
        if (!layerNorm) {
          T s = T(rstd);
          for (int64_t i = 0; i < d; ++i)
            yr[i] = math::rmsNormValue(sr[i], s, pg[i]);
        } else if (pb) {
          for (int64_t i = 0; i < d; ++i)
            yr[i] = math::layerNormValue(sr[i], mean, rstd, pg[i], pb[i]);
        } else {
          for (int64_t i = 0; i < d; ++i)
            yr[i] = math::layerNormValue(sr[i], mean, rstd, pg[i]);
        }
      }
    });
    return 0;
  });
  return {fromCompute(sum, storage), fromCompute(y, storage)};
}

/// Sum over blocks of kReduceBlock of the f32 squares x[i]^2 (x in f32), in
/// double, blocks added in order, rounded to f32: rtx.reduce sum of
/// rtx.mul(x, x) over every dimension.
template <typename X> float sumOfSquares(const X *x, int64_t n) {
  int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  std::vector<double> partial(blocks, 0.0);
  parallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      int64_t start = blk * kReduceBlock;
      int64_t stop = std::min(n, start + kReduceBlock);
      double acc = 0.0;
      for (int64_t i = start; i < stop; ++i) {
        float v = float(x[i]);
        acc += v * v; // the f32 square, summed in double
      }
      partial[blk] = acc;
    }
  });
  if (blocks == 0)
    return 0.0f;
  double acc = partial[0];
  for (int64_t blk = 1; blk < blocks; ++blk)
    acc += partial[blk];
  return static_cast<float>(acc);
}

} // namespace

int64_t rtxrt::detail::checkAddNormArguments(const std::string &op,
                                             const Tensor &input,
                                             const Tensor &residual,
                                             const Tensor &scale,
                                             const Tensor &bias) {
  checkFloat(op, input, "input");
  checkFloat(op, residual, "residual");
  checkSameDType(op, input, "input", residual, "residual");
  checkSameShape(op, input, "input", residual, "residual");
  return checkNormArguments(op, input, scale, bias);
}

void rtxrt::detail::checkMultiAdamWArguments(
    const std::string &op, const std::vector<Tensor> &params,
    const std::vector<Tensor> &grads, const std::vector<Tensor> &expAvgs,
    const std::vector<Tensor> &expAvgSqs, const Tensor &step,
    const LrSchedule &schedule, double beta1, double beta2, double eps,
    double weightDecay) {
  size_t n = params.size();
  if (n == 0)
    fail(op, "needs at least one parameter");
  if (grads.size() != n || expAvgs.size() != n || expAvgSqs.size() != n)
    fail(op, "needs as many gradients and moments as parameters (" +
                 std::to_string(n) + "), got " + std::to_string(grads.size()) +
                 ", " + std::to_string(expAvgs.size()) + " and " +
                 std::to_string(expAvgSqs.size()));
  for (size_t i = 0; i < n; ++i) {
    checkAdamWArguments(op + " (parameter " + std::to_string(i) + ")",
                        params[i], grads[i], expAvgs[i], expAvgSqs[i], step,
                        schedule, beta1, beta2, eps, weightDecay);
    if (params[i].dtype() != params[0].dtype() ||
        grads[i].dtype() != grads[0].dtype())
      fail(op, "parameter " + std::to_string(i) + " is " +
                   dtypeName(params[i].dtype()) + " with " +
                   dtypeName(grads[i].dtype()) + " gradients, parameter 0 " +
                   dtypeName(params[0].dtype()) + " with " +
                   dtypeName(grads[0].dtype()) +
                   ": one dtype for all parameters, one for all gradients");
  }
}

void rtxrt::detail::checkSumSquaresArguments(
    const std::string &op, const std::vector<Tensor> &inputs) {
  if (inputs.empty())
    fail(op, "needs at least one input");
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "input " + std::to_string(i);
    checkFloat(op, inputs[i], name.c_str());
    if (inputs[i].dtype() == DType::F64)
      fail(op, name + " must be f32, bf16 or f16 (the sum is f32), got f64");
  }
}

std::vector<Tensor> rtxrt::addLayerNorm(const Tensor &input,
                                        const Tensor &residual,
                                        const Tensor &scale, const Tensor &bias,
                                        double epsilon) {
  return addNorm("rtx.add_layernorm", input, residual, scale, bias, epsilon,
                 true);
}

std::vector<Tensor> rtxrt::addRmsNorm(const Tensor &input,
                                      const Tensor &residual,
                                      const Tensor &scale, double epsilon) {
  return addNorm("rtx.add_rmsnorm", input, residual, scale, Tensor(), epsilon,
                 false);
}

std::vector<Tensor> rtxrt::crossEntropyWithGrad(const Tensor &logits,
                                                const Tensor &labels,
                                                const Tensor &lossGrad,
                                                bool hasIgnoreIndex,
                                                int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy_with_grad";
  std::vector<int64_t> lab =
      loadLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  checkFloat(op, lossGrad, "loss_grad");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = static_cast<int64_t>(lab.size());
  auto ignored = [&](int64_t t) {
    return hasIgnoreIndex && lab[t] == ignoreIndex;
  };
  // The count and factor of rtx.cross_entropy_grad: dloss / n.
  int64_t count = 0;
  for (int64_t t = 0; t < tokens; ++t)
    count += ignored(t) ? 0 : 1;
  double factor =
      count ? lossGrad.getAsDouble(0) / static_cast<double>(count) : 0.0;
  Tensor x = toCompute(logits);
  Tensor dx(logits.shape(), x.dtype()); // zeros: ignored rows stay zero
  std::vector<double> loss(tokens, 0.0);
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(tokens, rowGrain(vocab), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (ignored(t))
          continue;
        const T *row = px + t * vocab;
        T max;
        double sum;
        math::softmaxStatistics(row, vocab, max, sum);
        loss[t] = math::crossEntropyLoss(max, sum, row[lab[t]]);
        math::crossEntropyGradRow(row, pdx + t * vocab, vocab, max,
                                  factor / sum, factor, lab[t]);
      }
    });
    return 0;
  });
  // rtx.cross_entropy's mean, in token order.
  double total = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    if (!ignored(t))
      total += loss[t];
  DType lossType = logits.dtype() == DType::F64 ? DType::F64 : DType::F32;
  return {Tensor::scalar(count ? total / static_cast<double>(count) : 0.0,
                         lossType),
          fromCompute(dx, logits.dtype())};
}

std::vector<Tensor> rtxrt::multiAdamwUpdate(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, int64_t warmupSteps, int64_t decaySteps, double minLr) {
  checkMultiAdamWArguments("rtx.multi_adamw_update", params, grads, expAvgs,
                           expAvgSqs, step,
                           LrSchedule{lr, warmupSteps, decaySteps, minLr},
                           beta1, beta2, eps, weightDecay);
  // On the CPU, each tensor's update is rtx.adamw_update's own kernel (bit
  // for bit by construction); one launch for all is what the GPU gains.
  size_t n = params.size();
  std::vector<Tensor> results(3 * n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<Tensor> one = adamwUpdate(
        params[i], grads[i], expAvgs[i], expAvgSqs[i], step, lr, beta1, beta2,
        eps, weightDecay, warmupSteps, decaySteps, minLr);
    results[i] = one[0];
    results[n + i] = one[1];
    results[2 * n + i] = one[2];
  }
  return results;
}

Tensor rtxrt::sumSquares(const std::vector<Tensor> &inputs) {
  checkSumSquaresArguments("rtx.sum_squares", inputs);
  // The optimizer's chain: total = 0 (f32), then total += sum(g * g) in f32.
  float total = 0.0f;
  for (const Tensor &input : inputs) {
    float s = 0.0f;
    if (input.dtype() == DType::F32)
      s = sumOfSquares(input.data<float>(), input.numel());
    else { // bf16/f16: converted to f32 first, exactly
      Tensor x = input.to(DType::F32);
      s = sumOfSquares(x.data<float>(), x.numel());
    }
    total = total + s;
  }
  return Tensor::scalar(total, DType::F32);
}
