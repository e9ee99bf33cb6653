//===- Fused.cu - the fused ops on the GPU: portable bodies ---------------===//
//
// The portable references of the fused ops (RTXFusedOps.td): the CPU
// kernels' formulas (runtime/lib/kernels/Fused.cpp) as bodies over one index,
// which the host emulation runs. On a CUDA build with the fast path selected
// (gpu::useFastKernels), the fast kernels of runtime/lib/gpu/fast/Fused*.cu
// run instead for the cases they cover (FusedFast.h says which); the others
// run these bodies, a documented choice rather than a failure.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"
#include "rtxrt/kernels/LrSchedule.h"

#if defined(__CUDACC__)
#include "fast/FusedFast.h"
#endif

#include <cmath>
#include <cstring>
#include <type_traits>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkFloat;
using rtxrt::detail::fail;

namespace {

/// `value` rounded to the element type `storage` (a DType as int) and back:
/// what storing a bf16/f16 result and reading it again gives.
template <typename T> RTX_GPU_FN T roundToStorage(T value, int storage) {
  if (storage == static_cast<int>(DType::F32) ||
      storage == static_cast<int>(DType::F64))
    return value;
  uint16_t bits;
  storeElement(&bits, storage, 0, static_cast<double>(value));
  return T(loadElement(&bits, storage, 0));
}

/// One body per row: the sum (rounded as rtx.add stores it), its statistics
/// and the normalised row, by the CPU kernels' row functions.
template <typename T>
void addNormT(const Tensor &x, const Tensor &r, const Tensor &g,
              const Tensor &b, Tensor &sum, Tensor &y, int64_t rows, int64_t d,
              double epsilon, bool layerNorm, DType storage) {
  const T *px = static_cast<const T *>(x.raw());
  const T *pr = static_cast<const T *>(r.raw());
  const T *pg = static_cast<const T *>(g.raw());
  const T *pb = b.defined() ? static_cast<const T *>(b.raw()) : nullptr;
  T *ps = static_cast<T *>(sum.raw());
  T *py = static_cast<T *>(y.raw());
  int st = static_cast<int>(storage);
  forEach(
      rows, RTX_GPU_BODY(int64_t row) {
        const T *xr = px + row * d, *rr = pr + row * d;
        T *sr = ps + row * d, *yr = py + row * d;
        for (int64_t i = 0; i < d; ++i)
          sr[i] = roundToStorage(
              math::binaryValue(BinaryKind::Add, xr[i], rr[i]), st);
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
      });
}

std::vector<Tensor> addNorm(const std::string &op, const Tensor &input,
                            const Tensor &residual, const Tensor &scale,
                            const Tensor &bias, double epsilon,
                            bool layerNorm) {
  int64_t d =
      rtxrt::detail::checkAddNormArguments(op, input, residual, scale, bias);
  checkOnGpu(op, input, "input");
  checkOnGpu(op, residual, "residual");
  checkOnGpu(op, scale, "scale");
  if (bias.defined())
    checkOnGpu(op, bias, "bias");
  int64_t rows = d ? input.numel() / d : 0;
#if defined(__CUDACC__)
  if (gpu::useFastKernels() && gpu::fast::addNormCovers(input, scale, bias, d))
    return gpu::fast::addNorm(input, residual, scale, bias, epsilon, layerNorm);
#endif
  Tensor x = toCompute(input), r = toCompute(residual), g = toCompute(scale);
  Tensor b = bias.defined() ? toCompute(bias) : Tensor();
  Tensor sum = empty(input.shape(), x.dtype());
  Tensor y = empty(input.shape(), x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), addNormT, x, r, g, b, sum, y, rows, d, epsilon,
                  layerNorm, input.dtype());
  return {fromCompute(sum, input.dtype()), fromCompute(y, input.dtype())};
}

/// Per row: the loss of the token (NaN for an ignored one, which the mean
/// skips) and its gradient row, from one computation of the row's
/// statistics. `counted` holds n, found first by one body.
template <typename T>
void crossEntropyWithGradT(const Tensor &x, const Tensor &labels,
                           const Tensor &lossGrad, Tensor &loss, Tensor &dx,
                           int64_t tokens, int64_t vocab, bool hasIgnore,
                           int64_t ignoreIndex) {
  const T *px = static_cast<const T *>(x.raw());
  const void *pl = labels.raw();
  int ltype = static_cast<int>(labels.dtype());
  const void *pg = lossGrad.raw();
  int gtype = static_cast<int>(lossGrad.dtype());
  double *ploss = static_cast<double *>(loss.raw());
  T *pdx = static_cast<T *>(dx.raw());
  Tensor counted = countedLabels(labels, hasIgnore, ignoreIndex);
  const int64_t *pc = static_cast<const int64_t *>(counted.raw());
  forEach(
      tokens, RTX_GPU_BODY(int64_t t) {
        int64_t label = static_cast<int64_t>(loadElement(pl, ltype, t));
        T *drow = pdx + t * vocab;
        if (hasIgnore && label == ignoreIndex) {
          ploss[t] = NAN; // not counted
          for (int64_t i = 0; i < vocab; ++i)
            drow[i] = T(0);
          return;
        }
        const T *row = px + t * vocab;
        T max;
        double sum;
        math::softmaxStatistics(row, vocab, max, sum);
        ploss[t] = math::crossEntropyLoss(max, sum, row[label]);
        double factor = loadElement(pg, gtype, 0) / static_cast<double>(pc[0]);
        math::crossEntropyGradRow(row, drow, vocab, max, factor / sum, factor,
                                  label);
      });
}

/// The mean of the counted (non-NaN) losses, in token order, by one body.
Tensor meanOfCounted(const Tensor &loss, int64_t tokens) {
  Tensor mean = empty({}, DType::F64);
  const double *pl = static_cast<const double *>(loss.raw());
  double *pm = static_cast<double *>(mean.raw());
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        double total = 0.0;
        int64_t count = 0;
        for (int64_t t = 0; t < tokens; ++t)
          if (pl[t] == pl[t]) {
            total += pl[t];
            ++count;
          }
        pm[0] = count ? total / static_cast<double>(count) : 0.0;
      });
  return mean;
}

/// rtx.adamw_update's element in the CPU kernel's arithmetic: C is f32
/// unless a tensor is f64, the rate and coefficients derived from the step
/// on the device (reading it on the host would wait for the step so far).
template <typename C, typename P, typename M>
void adamwTensorT(const Tensor &p, const Tensor &g, const Tensor &m,
                  const Tensor &v, const Tensor &step, Tensor &newP,
                  Tensor &newM, Tensor &newV, LrSchedule schedule, double beta1,
                  double beta2, double eps, double weightDecay) {
  const P *pp = static_cast<const P *>(p.raw());
  const M *pg = static_cast<const M *>(g.raw());
  const M *pm = static_cast<const M *>(m.raw());
  const M *pv = static_cast<const M *>(v.raw());
  const float *pt = static_cast<const float *>(step.raw());
  P *pnp = static_cast<P *>(newP.raw());
  M *pnm = static_cast<M *>(newM.raw());
  M *pnv = static_cast<M *>(newV.raw());
  forEach(
      p.numel(), RTX_GPU_BODY(int64_t i) {
        double t = pt[0];
        double lr = schedule.at(t);
        double decay = 1.0 - lr * weightDecay;
        C stepSize = C(lr / (1.0 - pow(beta1, t)));
        C invSqrtCorrection2 = C(1.0 / sqrt(1.0 - pow(beta2, t)));
        C gi = C(pg[i]);
        C mi = C(beta1) * C(pm[i]) + C(1.0 - beta1) * gi;
        C vi = C(beta2) * C(pv[i]) + C(1.0 - beta2) * gi * gi;
        C pi =
            C(pp[i]) * C(decay) -
            stepSize * mi / (math::libSqrt(vi) * invSqrtCorrection2 + C(eps));
        pnp[i] = P(pi);
        pnm[i] = M(mi);
        pnv[i] = M(vi);
      });
}

template <typename P, typename M>
void adamwTensorPM(const Tensor &p, const Tensor &g, const Tensor &m,
                   const Tensor &v, const Tensor &step, Tensor &newP,
                   Tensor &newM, Tensor &newV, const LrSchedule &schedule,
                   double beta1, double beta2, double eps, double wd) {
  constexpr bool wide =
      std::is_same<P, double>::value || std::is_same<M, double>::value;
  using C = typename std::conditional<wide, double, float>::type;
  adamwTensorT<C, P, M>(p, g, m, v, step, newP, newM, newV, schedule, beta1,
                        beta2, eps, wd);
}

template <typename P>
void adamwTensorP(DType momentType, const Tensor &p, const Tensor &g,
                  const Tensor &m, const Tensor &v, const Tensor &step,
                  Tensor &newP, Tensor &newM, Tensor &newV,
                  const LrSchedule &schedule, double beta1, double beta2,
                  double eps, double wd) {
  if (momentType == DType::F64)
    adamwTensorPM<P, double>(p, g, m, v, step, newP, newM, newV, schedule,
                             beta1, beta2, eps, wd);
  else
    adamwTensorPM<P, float>(p, g, m, v, step, newP, newM, newV, schedule, beta1,
                            beta2, eps, wd);
}

/// rtx.reduce's blocks of the f32 squares of x, each summed in double in
/// index order by one body, into partial[first..).
template <typename X>
void squareBlocksT(const Tensor &x, Tensor &partial, int64_t first) {
  const X *px = static_cast<const X *>(x.raw());
  double *pp = static_cast<double *>(partial.raw()) + first;
  int64_t n = x.numel();
  int64_t blocks =
      (n + rtxrt::detail::kReduceBlock - 1) / rtxrt::detail::kReduceBlock;
  int64_t blockSize = rtxrt::detail::kReduceBlock;
  forEach(
      blocks, RTX_GPU_BODY(int64_t blk) {
        int64_t start = blk * blockSize;
        int64_t stop = n < start + blockSize ? n : start + blockSize;
        double acc = 0.0;
        for (int64_t i = start; i < stop; ++i) {
          float v = float(px[i]);
          float square = v * v;
          acc += square;
        }
        pp[blk] = acc;
      });
}

} // namespace

std::vector<Tensor> gpu::addLayerNorm(const Tensor &input,
                                      const Tensor &residual,
                                      const Tensor &scale, const Tensor &bias,
                                      double epsilon) {
  return addNorm("rtx.add_layernorm", input, residual, scale, bias, epsilon,
                 true);
}

std::vector<Tensor> gpu::addRmsNorm(const Tensor &input, const Tensor &residual,
                                    const Tensor &scale, double epsilon) {
  return addNorm("rtx.add_rmsnorm", input, residual, scale, Tensor(), epsilon,
                 false);
}

std::vector<Tensor> gpu::crossEntropyWithGrad(const Tensor &logits,
                                              const Tensor &labels,
                                              const Tensor &lossGrad,
                                              bool hasIgnoreIndex,
                                              int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy_with_grad";
  checkLogitsLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  checkFloat(op, lossGrad, "loss_grad");
  checkOnGpu(op, lossGrad, "loss_grad");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
  DType lossType = logits.dtype() == DType::F64 ? DType::F64 : DType::F32;
#if defined(__CUDACC__)
  if (gpu::useFastKernels() && gpu::fast::crossEntropyWithGradCovers(logits))
    return gpu::fast::crossEntropyWithGrad(logits, labels, lossGrad,
                                           hasIgnoreIndex, ignoreIndex);
#endif
  Tensor x = toCompute(logits);
  Tensor dx = empty(logits.shape(), x.dtype());
  Tensor loss = empty({tokens}, DType::F64);
  if (vocab > 0)
    RTX_GPU_COMPUTE(x.dtype(), crossEntropyWithGradT, x, labels, lossGrad, loss,
                    dx, tokens, vocab, hasIgnoreIndex, ignoreIndex);
  else { // every label is ignored (checked above): nothing is counted
    double *pl = static_cast<double *>(loss.raw());
    forEach(
        tokens, RTX_GPU_BODY(int64_t t) { pl[t] = NAN; });
  }
  return {fromCompute(meanOfCounted(loss, tokens), lossType),
          fromCompute(dx, logits.dtype())};
}

std::vector<Tensor> gpu::multiAdamwUpdate(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, double lr, double beta1, double beta2, double eps,
    double weightDecay, int64_t warmupSteps, int64_t decaySteps, double minLr) {
  const std::string op = "rtx.multi_adamw_update";
  const LrSchedule schedule{lr, warmupSteps, decaySteps, minLr};
  rtxrt::detail::checkMultiAdamWArguments(op, params, grads, expAvgs, expAvgSqs,
                                          step, schedule, beta1, beta2, eps,
                                          weightDecay);
  if (step.dtype() != DType::F32) // the kernels read it on the device
    fail(op, std::string("step must be f32, got ") + dtypeName(step.dtype()));
  checkOnGpu(op, step, "step");
  size_t n = params.size();
  for (size_t i = 0; i < n; ++i)
    for (const Tensor *t : {&params[i], &grads[i], &expAvgs[i], &expAvgSqs[i]})
      checkOnGpu(op, *t, "every parameter, gradient and moment");
#if defined(__CUDACC__)
  if (gpu::useFastKernels() && gpu::fast::multiAdamwCovers(params, grads))
    return gpu::fast::multiAdamwUpdate(params, grads, expAvgs, expAvgSqs, step,
                                       schedule, beta1, beta2, eps,
                                       weightDecay);
#endif
  // The reference: one body per element of each tensor, in the CPU
  // kernel's arithmetic.
  std::vector<Tensor> results(3 * n);
  for (size_t i = 0; i < n; ++i) {
    Tensor p = toCompute(params[i]), g = toCompute(grads[i]),
           m = toCompute(expAvgs[i]), v = toCompute(expAvgSqs[i]);
    Tensor newP = empty(p.shape(), p.dtype());
    Tensor newM = empty(g.shape(), m.dtype());
    Tensor newV = empty(g.shape(), v.dtype());
    if (p.dtype() == DType::F64)
      adamwTensorP<double>(m.dtype(), p, g, m, v, step, newP, newM, newV,
                           schedule, beta1, beta2, eps, weightDecay);
    else
      adamwTensorP<float>(m.dtype(), p, g, m, v, step, newP, newM, newV,
                          schedule, beta1, beta2, eps, weightDecay);
    results[i] = fromCompute(newP, params[i].dtype());
    results[n + i] = fromCompute(newM, grads[i].dtype());
    results[2 * n + i] = fromCompute(newV, grads[i].dtype());
  }
  return results;
}

Tensor gpu::sumSquares(const std::vector<Tensor> &inputs) {
  const std::string op = "rtx.sum_squares";
  rtxrt::detail::checkSumSquaresArguments(op, inputs);
  for (const Tensor &input : inputs)
    checkOnGpu(op, input, "every input");
#if defined(__CUDACC__)
  if (gpu::useFastKernels())
    return gpu::fast::sumSquares(inputs);
#endif
  // Each tensor's blocks, then one body adding them as rtx.reduce does,
  // rounding each tensor's sum to f32 and adding it to an f32 total.
  std::vector<int64_t> firstHost;
  int64_t blocks = 0;
  for (const Tensor &input : inputs) {
    firstHost.push_back(blocks);
    blocks += (input.numel() + rtxrt::detail::kReduceBlock - 1) /
              rtxrt::detail::kReduceBlock;
  }
  firstHost.push_back(blocks);
  Tensor partial = empty({blocks > 0 ? blocks : 1}, DType::F64);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = toCompute(inputs[i]);
    squareBlocksT<float>(x, partial, firstHost[i]);
  }
  Tensor firstTable(Shape{static_cast<int64_t>(firstHost.size())}, DType::I64);
  std::memcpy(firstTable.raw(), firstHost.data(),
              firstHost.size() * sizeof(int64_t));
  Tensor first = gpu::toDevice(firstTable);
  const int64_t *pf = static_cast<const int64_t *>(first.raw());
  const double *pp = static_cast<const double *>(partial.raw());
  Tensor total = empty({}, DType::F32);
  float *pt = static_cast<float *>(total.raw());
  int64_t count = static_cast<int64_t>(inputs.size());
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        float sum = 0.0f;
        for (int64_t k = 0; k < count; ++k) {
          if (pf[k] == pf[k + 1]) // an empty tensor adds 0
            continue;
          double acc = pp[pf[k]];
          for (int64_t blk = pf[k] + 1; blk < pf[k + 1]; ++blk)
            acc += pp[blk];
          sum = sum + static_cast<float>(acc);
        }
        pt[0] = sum;
      });
  return total;
}
