//===- Optimizers.cpp - adamw_update, sgd_update --------------------------===//
//
// Elementwise parameter updates. AdamW mixes precisions (a bf16 or f32
// parameter with f32 or f64 moments): every element is computed in f32, or
// in f64 when a tensor is f64 (as torch.optim.AdamW computes), from the
// stored values, and each result is rounded once to its own dtype.
// SGD is computed in the gradient's compute type, as its op says.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <type_traits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

/// A hyper-parameter must be finite and inside [low, high] (the ranges of the
/// ops' verifiers; checked again here for callers that bypass them).
void checkHyperParameter(const std::string &op, const char *name, double value,
                         double low, double high) {
  if (!(value >= low && value <= high))
    fail(op, std::string(name) + " " + std::to_string(value) + " is outside [" +
                 std::to_string(low) + ", " + std::to_string(high) + "]");
}

/// A schedule the ops' verifiers accept: warmup_steps >= 0, decay_steps 0 or
/// past the warm-up, 0 <= min_lr <= lr, and min_lr only with a decay.
void checkLrSchedule(const std::string &op, const LrSchedule &schedule) {
  checkHyperParameter(op, "lr", schedule.lr, 0.0, 1e9);
  if (schedule.warmupSteps < 0)
    fail(op, "warmup_steps " + std::to_string(schedule.warmupSteps) +
                 " must be >= 0");
  if (schedule.decaySteps != 0 && schedule.decaySteps <= schedule.warmupSteps)
    fail(op, "decay_steps " + std::to_string(schedule.decaySteps) +
                 " must be 0 (no decay) or greater than warmup_steps " +
                 std::to_string(schedule.warmupSteps));
  checkHyperParameter(op, "min_lr", schedule.minLr, 0.0, schedule.lr);
  if (schedule.minLr != 0.0 && schedule.decaySteps == 0)
    fail(op, "min_lr " + std::to_string(schedule.minLr) +
                 " needs decay_steps (the step from which it applies)");
}

/// AdamW's coefficients in the type C that the update computes in.
template <typename C> struct AdamWCoefficients {
  C beta1, beta2, oneMinusBeta1, oneMinusBeta2, decay, stepSize,
      invSqrtCorrection2, eps;
};

/// Updates elements [begin, end). A function of its own, with unaliased
/// pointers and the coefficients by value: written inline in the
/// parallelFor body, the loop stayed scalar (one vsqrtss per element) and
/// was 7% of a data-parallel GPT-2 step.
template <typename C, typename P, typename M>
void adamwRange(int64_t begin, int64_t end, const AdamWCoefficients<C> k,
                const P *__restrict param, const M *__restrict grad,
                const M *__restrict expAvg, const M *__restrict expAvgSq,
                P *__restrict newParam, M *__restrict newExpAvg,
                M *__restrict newExpAvgSq) {
  for (int64_t i = begin; i < end; ++i) {
    C g = C(grad[i]);
    C m = k.beta1 * C(expAvg[i]) + k.oneMinusBeta1 * g;
    C v = k.beta2 * C(expAvgSq[i]) + k.oneMinusBeta2 * g * g;
    C p = C(param[i]) * k.decay -
          k.stepSize * m / (std::sqrt(v) * k.invSqrtCorrection2 + k.eps);
    newParam[i] = P(p);
    newExpAvg[i] = M(m);
    newExpAvgSq[i] = M(v);
  }
}

} // namespace

void rtxrt::detail::checkAdamWArguments(
    const std::string &op, const Tensor &param, const Tensor &grad,
    const Tensor &expAvg, const Tensor &expAvgSq, const Tensor &step,
    const LrSchedule &schedule, double beta1, double beta2, double eps,
    double weightDecay) {
  checkFloat(op, param, "param");
  checkFloat(op, grad, "grad");
  checkFloat(op, expAvg, "exp_avg");
  checkFloat(op, expAvgSq, "exp_avg_sq");
  checkSameDType(op, grad, "grad", expAvg, "exp_avg");
  checkSameDType(op, grad, "grad", expAvgSq, "exp_avg_sq");
  checkSameShape(op, param, "param", grad, "grad");
  checkSameShape(op, param, "param", expAvg, "exp_avg");
  checkSameShape(op, param, "param", expAvgSq, "exp_avg_sq");
  checkFloat(op, step, "step");
  if (step.rank() != 0)
    fail(op, "step must be a scalar, got " + shapeToString(step.shape()));
  checkLrSchedule(op, schedule);
  checkHyperParameter(op, "beta1", beta1, 0.0, 0.999999999);
  checkHyperParameter(op, "beta2", beta2, 0.0, 0.999999999);
  checkHyperParameter(op, "eps", eps, 0.0, 1.0);
  checkHyperParameter(op, "weight_decay", weightDecay, 0.0, 1e9);
}

void rtxrt::detail::checkSgdArguments(const std::string &op,
                                      const Tensor &param, const Tensor &grad,
                                      double lr, double weightDecay) {
  checkFloat(op, param, "param");
  checkFloat(op, grad, "grad");
  checkSameShape(op, param, "param", grad, "grad");
  checkHyperParameter(op, "lr", lr, 0.0, 1e9);
  checkHyperParameter(op, "weight_decay", weightDecay, 0.0, 1e9);
}

std::vector<Tensor> rtxrt::adamwUpdate(const Tensor &param, const Tensor &grad,
                                       const Tensor &expAvg,
                                       const Tensor &expAvgSq,
                                       const Tensor &step, double lr,
                                       double beta1, double beta2, double eps,
                                       double weightDecay, int64_t warmupSteps,
                                       int64_t decaySteps, double minLr) {
  const std::string op = "rtx.adamw_update";
  const LrSchedule schedule{lr, warmupSteps, decaySteps, minLr};
  checkAdamWArguments(op, param, grad, expAvg, expAvgSq, step, schedule, beta1,
                      beta2, eps, weightDecay);
  double t = step.getAsDouble(0);
  if (!(t >= 1.0) || !std::isfinite(t))
    fail(op, "step " + std::to_string(t) +
                 " must be a finite number >= 1 "
                 "(steps are 1-based)");

  // The weight decay follows the scheduled rate too, as torch.optim.AdamW's
  // does under an lr_scheduler.
  double rate = schedule.at(t);
  double decay = 1.0 - rate * weightDecay;
  double stepSize = rate / (1.0 - std::pow(beta1, t));
  // sqrt(v / c2) as sqrt(v) / sqrt(c2), as torch.optim.AdamW computes it:
  // one square root and one division per element instead of two divisions.
  double invSqrtCorrection2 = 1.0 / std::sqrt(1.0 - std::pow(beta2, t));
  Tensor p = toCompute(param), g = toCompute(grad), m = toCompute(expAvg),
         v = toCompute(expAvgSq);
  Tensor newP = Tensor::uninitialized(param.shape(), p.dtype());
  Tensor newM = Tensor::uninitialized(grad.shape(), m.dtype());
  Tensor newV = Tensor::uninitialized(grad.shape(), v.dtype());
  int64_t n = param.numel();
  dispatchCompute(param.dtype(), [&](auto paramZero) {
    using P = decltype(paramZero);
    return dispatchCompute(grad.dtype(), [&](auto momentZero) {
      using M = decltype(momentZero);
      const P *pp = p.data<P>();
      const M *pg = g.data<M>(), *pm = m.data<M>(), *pv = v.data<M>();
      P *pnp = newP.data<P>();
      M *pnm = newM.data<M>(), *pnv = newV.data<M>();
      // f32 arithmetic unless a tensor is f64 (as torch.optim.AdamW
      // computes): in double, this loop was the costliest kernel after the
      // GEMMs of a data-parallel GPT-2 step, every rank updating every
      // parameter.
      using C = std::conditional_t<std::is_same_v<P, double> ||
                                       std::is_same_v<M, double>,
                                   double, float>;
      const AdamWCoefficients<C> k{
          C(beta1), C(beta2),    C(1.0 - beta1),        C(1.0 - beta2),
          C(decay), C(stepSize), C(invSqrtCorrection2), C(eps)};
      parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
        adamwRange(begin, end, k, pp, pg, pm, pv, pnp, pnm, pnv);
      });
      return 0;
    });
  });
  return {fromCompute(newP, param.dtype()), fromCompute(newM, grad.dtype()),
          fromCompute(newV, grad.dtype())};
}

Tensor rtxrt::sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                        double weightDecay) {
  const std::string op = "rtx.sgd_update";
  checkSgdArguments(op, param, grad, lr, weightDecay);
  // The gradient's compute type; the parameter is converted to it.
  DType c = computeType(grad.dtype());
  Tensor p = param.dtype() == c ? param : param.to(c), g = toCompute(grad);
  Tensor out = Tensor::uninitialized(param.shape(), c);
  dispatchCompute(c, [&](auto zero) {
    using T = decltype(zero);
    const T *pp = p.data<T>(), *pg = g.data<T>();
    T *po = out.data<T>();
    const T rate = T(lr), decay = T(weightDecay);
    parallelFor(param.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        po[i] = pp[i] - rate * (pg[i] + decay * pp[i]);
    });
    return 0;
  });
  return fromCompute(out, param.dtype());
}
