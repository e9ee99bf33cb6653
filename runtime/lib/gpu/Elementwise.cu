//===- Elementwise.cu - elementwise kernels and optimizer updates ---------===//
//
// One body per element. The float elementwise bodies read bf16/f16 storage
// where it lies, compute in f32 and round the result once, as the CPU
// kernels do (FloatStorage, DeviceMath.h: no f32 copies of the operands);
// argument checks are the CPU kernels' own (KernelUtils.h), run on shapes
// and dtypes only. In the CUDA build, unary, binary, unary_grad, swiglu and
// convert on f32/bf16/f16 run the fast kernels (fast/ElementwiseFast.cu)
// when gpu::useFastKernels().
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"
#include "rtxrt/core/Random.h"
#include "rtxrt/core/detail/Philox.h"
#include "rtxrt/kernels/LrSchedule.h"

#if defined(__CUDACC__)
#include "fast/MemoryBound.h"
#endif

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkDefined;
using rtxrt::detail::checkFloat;
using rtxrt::detail::checkElementwisePair;
using rtxrt::detail::checkSameDType;
using rtxrt::detail::checkSameShape;
using rtxrt::detail::fail;

namespace {

#if defined(__CUDACC__)
/// Whether the fast elementwise kernels run for operands of `dtype`.
bool fastElementwise(DType dtype) {
  return gpu::useFastKernels() && gpu::fast::coversFloat(dtype);
}
#endif

template <DType D> void unaryT(UnaryKind kind, const Tensor &x, Tensor &y) {
  using S = FloatStorage<D>;
  using C = typename S::Compute;
  const void *px = x.raw();
  void *py = y.raw();
  int k = static_cast<int>(kind);
  forEach(
      x.numel(), RTX_GPU_BODY(int64_t i) {
        S::store(py, i, unaryValue<C>(static_cast<UnaryKind>(k), S::load(px, i)));
      });
}

/// Integer operands (i32, i64).
template <typename T>
void binaryIntT(BinaryKind kind, const Tensor &a, const Tensor &b, Tensor &y) {
  const T *pa = static_cast<const T *>(a.raw());
  const T *pb = static_cast<const T *>(b.raw());
  T *py = static_cast<T *>(y.raw());
  int k = static_cast<int>(kind);
  forEach(
      a.numel(), RTX_GPU_BODY(int64_t i) {
        py[i] = binaryValue<T>(static_cast<BinaryKind>(k), pa[i], pb[i]);
      });
}

template <DType D>
void binaryT(BinaryKind kind, const Tensor &a, const Tensor &b, Tensor &y) {
  using S = FloatStorage<D>;
  using C = typename S::Compute;
  const void *pa = a.raw(), *pb = b.raw();
  void *py = y.raw();
  int k = static_cast<int>(kind);
  forEach(
      a.numel(), RTX_GPU_BODY(int64_t i) {
        S::store(py, i,
                 binaryValue<C>(static_cast<BinaryKind>(k), S::load(pa, i),
                                S::load(pb, i)));
      });
}

template <DType D> void swigluT(const Tensor &g, const Tensor &u, Tensor &y) {
  using S = FloatStorage<D>;
  const void *pg = g.raw(), *pu = u.raw();
  void *py = y.raw();
  forEach(
      g.numel(), RTX_GPU_BODY(int64_t i) {
        S::store(py, i, math::SwiGLU::value(S::load(pg, i), S::load(pu, i)));
      });
}

template <typename T>
void compareT(CompareKind kind, const Tensor &a, const Tensor &b, Tensor &y) {
  const T *pa = static_cast<const T *>(a.raw());
  const T *pb = static_cast<const T *>(b.raw());
  uint8_t *py = static_cast<uint8_t *>(y.raw());
  int k = static_cast<int>(kind);
  forEach(
      a.numel(), RTX_GPU_BODY(int64_t i) {
        T u = pa[i], v = pb[i];
        bool r = false;
        switch (static_cast<CompareKind>(k)) {
        case CompareKind::EQ:
          r = u == v;
          break;
        case CompareKind::NE:
          r = u != v;
          break;
        case CompareKind::LT:
          r = u < v;
          break;
        case CompareKind::LE:
          r = u <= v;
          break;
        case CompareKind::GT:
          r = u > v;
          break;
        case CompareKind::GE:
          r = u >= v;
          break;
        }
        py[i] = r ? 1 : 0;
      });
}

template <DType D>
void unaryGradT(UnaryFn fn, const Tensor &x, const Tensor &dy, Tensor &dx) {
  using S = FloatStorage<D>;
  using C = typename S::Compute;
  const void *px = x.raw(), *pdy = dy.raw();
  void *pdx = dx.raw();
  int f = static_cast<int>(fn);
  forEach(
      x.numel(), RTX_GPU_BODY(int64_t i) {
        S::store(pdx, i,
                 unaryGradValue<C>(static_cast<UnaryFn>(f), S::load(px, i),
                                   S::load(pdy, i)));
      });
}

template <DType D>
void dropoutT(const Tensor &x, Tensor &y, double rate, uint64_t key,
              bool identity, Dims local, Dims offsets, Dims globalStrides) {
  using S = FloatStorage<D>;
  using T = typename S::Compute;
  const void *px = x.raw();
  void *py = y.raw();
  const T scale = T(1.0 / (1.0 - rate));
  forEach(
      x.numel(), RTX_GPU_BODY(int64_t i) {
        int64_t g = i;
        if (!identity) {
          int64_t rest = i;
          g = 0;
          for (int d = local.rank - 1; d >= 0; --d) {
            int64_t coord = rest % local.v[d];
            rest /= local.v[d];
            g += (coord + offsets.v[d]) * globalStrides.v[d];
          }
        }
        double u = rtxrt::detail::philoxUniform(key, static_cast<uint64_t>(g));
        S::store(py, i, u < rate ? T(0) : S::load(px, i) * scale);
      });
}

template <typename T>
void sgdT(const Tensor &p, const Tensor &g, Tensor &out, double lr,
          double weightDecay) {
  const T *pp = static_cast<const T *>(p.raw());
  const T *pg = static_cast<const T *>(g.raw());
  T *po = static_cast<T *>(out.raw());
  const T rate = T(lr), decay = T(weightDecay);
  forEach(
      p.numel(), RTX_GPU_BODY(int64_t i) {
        po[i] = pp[i] - rate * (pg[i] + decay * pp[i]);
      });
}

template <typename P, typename M>
void adamwT(const Tensor &p, const Tensor &g, const Tensor &m, const Tensor &v,
            const Tensor &step, Tensor &newP, Tensor &newM, Tensor &newV,
            LrSchedule schedule, double beta1, double beta2, double eps,
            double weightDecay) {
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
        // The step lives on the device: reading it on the host would wait for
        // the whole step so far. Each element derives the same rate and
        // corrections.
        double t = pt[0];
        double lr = schedule.at(t);
        double decay = 1.0 - lr * weightDecay;
        double stepSize = lr / (1.0 - pow(beta1, t));
        double invSqrtCorrection2 = 1.0 / sqrt(1.0 - pow(beta2, t));
        double gi = pg[i];
        double mi = beta1 * static_cast<double>(pm[i]) + (1.0 - beta1) * gi;
        double vi =
            beta2 * static_cast<double>(pv[i]) + (1.0 - beta2) * gi * gi;
        double pi = static_cast<double>(pp[i]) * decay;
        pi -= stepSize * mi / (sqrt(vi) * invSqrtCorrection2 + eps);
        pnp[i] = P(pi);
        pnm[i] = M(mi);
        pnv[i] = M(vi);
      });
}

template <typename P>
void adamwP(DType momentType, const Tensor &p, const Tensor &g, const Tensor &m,
            const Tensor &v, const Tensor &step, Tensor &newP, Tensor &newM,
            Tensor &newV, const LrSchedule &schedule, double beta1,
            double beta2, double eps, double wd) {
  if (momentType == DType::F64)
    adamwT<P, double>(p, g, m, v, step, newP, newM, newV, schedule, beta1,
                      beta2, eps, wd);
  else
    adamwT<P, float>(p, g, m, v, step, newP, newM, newV, schedule, beta1, beta2,
                     eps, wd);
}

} // namespace

Tensor gpu::convert(const Tensor &input, DType to) {
  checkOnGpu("rtx.convert", input, "input");
#if defined(__CUDACC__)
  if (fastElementwise(input.dtype()) && fastElementwise(to))
    return gpu::fast::convert(input, to);
#endif
  // Each element is read in its own dtype and stored in the other: no copy.
  Tensor out = empty(input.shape(), to);
  const void *src = input.raw();
  void *dst = out.raw();
  int from = static_cast<int>(input.dtype()), into = static_cast<int>(to);
  forEach(
      input.numel(), RTX_GPU_BODY(int64_t i) {
        storeElement(dst, into, i, loadElement(src, from, i));
      });
  return out;
}

Tensor gpu::unary(UnaryKind kind, const Tensor &input) {
  std::string op = "rtx.unary";
  checkFloat(op, input, "input");
  checkOnGpu(op, input, "input");
#if defined(__CUDACC__)
  if (fastElementwise(input.dtype()))
    return gpu::fast::unary(kind, input);
#endif
  Tensor y = empty(input.shape(), input.dtype());
  RTX_GPU_FLOAT_STORAGE(input.dtype(), unaryT, kind, input, y);
  return y;
}

Tensor gpu::swiglu(const Tensor &gate, const Tensor &up) {
  std::string op = "rtx.swiglu";
  checkElementwisePair(op, gate, "gate", up, "up");
  checkOnGpu(op, gate, "gate");
  checkOnGpu(op, up, "up");
#if defined(__CUDACC__)
  if (fastElementwise(gate.dtype()))
    return gpu::fast::swiglu(gate, up);
#endif
  Tensor y = empty(gate.shape(), gate.dtype());
  RTX_GPU_FLOAT_STORAGE(gate.dtype(), swigluT, gate, up, y);
  return y;
}

Tensor gpu::binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs) {
  std::string op = "rtx.binary";
  checkDefined(op, lhs, "lhs");
  checkDefined(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  checkSameShape(op, lhs, "lhs", rhs, "rhs");
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
  if (lhs.dtype() == DType::I32 || lhs.dtype() == DType::I64) {
    if (kind == BinaryKind::Div)
      fail(op, "integer division is not supported by the GPU kernels");
    Tensor y = empty(lhs.shape(), lhs.dtype());
    if (lhs.dtype() == DType::I32)
      binaryIntT<int32_t>(kind, lhs, rhs, y);
    else
      binaryIntT<int64_t>(kind, lhs, rhs, y);
    return y;
  }
  checkFloat(op, lhs, "lhs");
#if defined(__CUDACC__)
  if (fastElementwise(lhs.dtype()))
    return gpu::fast::binary(kind, lhs, rhs);
#endif
  Tensor y = empty(lhs.shape(), lhs.dtype());
  RTX_GPU_FLOAT_STORAGE(lhs.dtype(), binaryT, kind, lhs, rhs, y);
  return y;
}

Tensor gpu::compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs) {
  std::string op = "rtx.compare";
  checkDefined(op, lhs, "lhs");
  checkDefined(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  checkSameShape(op, lhs, "lhs", rhs, "rhs");
  checkOnGpu(op, lhs, "lhs");
  checkOnGpu(op, rhs, "rhs");
  Tensor y = empty(lhs.shape(), DType::I1);
  switch (lhs.dtype()) {
  case DType::I1:
    compareT<uint8_t>(kind, lhs, rhs, y);
    break;
  case DType::I32:
    compareT<int32_t>(kind, lhs, rhs, y);
    break;
  case DType::I64:
    compareT<int64_t>(kind, lhs, rhs, y);
    break;
  default: {
    Tensor a = toCompute(lhs), b = toCompute(rhs);
    if (a.dtype() == DType::F64)
      compareT<double>(kind, a, b, y);
    else
      compareT<float>(kind, a, b, y);
  }
  }
  return y;
}

Tensor gpu::where(const Tensor &condition, const Tensor &onTrue,
                  const Tensor &onFalse) {
  std::string op = "rtx.where";
  checkDefined(op, condition, "condition");
  checkDefined(op, onTrue, "on_true");
  checkDefined(op, onFalse, "on_false");
  if (condition.dtype() != DType::I1)
    fail(op, std::string("condition must be i1, got ") +
                 dtypeName(condition.dtype()));
  checkSameDType(op, onTrue, "on_true", onFalse, "on_false");
  checkSameShape(op, onTrue, "on_true", onFalse, "on_false");
  checkSameShape(op, condition, "condition", onTrue, "on_true");
  checkOnGpu(op, condition, "condition");
  checkOnGpu(op, onTrue, "on_true");
  checkOnGpu(op, onFalse, "on_false");
  Tensor y = empty(onTrue.shape(), onTrue.dtype());
  const uint8_t *c = static_cast<const uint8_t *>(condition.raw());
  const unsigned char *a = static_cast<const unsigned char *>(onTrue.raw());
  const unsigned char *b = static_cast<const unsigned char *>(onFalse.raw());
  unsigned char *out = static_cast<unsigned char *>(y.raw());
  size_t width = dtypeSize(onTrue.dtype());
  forEach(
      y.numel(), RTX_GPU_BODY(int64_t i) {
        const unsigned char *src = (c[i] ? a : b) + i * width;
        for (size_t byte = 0; byte < width; ++byte)
          out[i * width + byte] = src[byte];
      });
  return y;
}

Tensor gpu::maskedFill(const Tensor &input, const Tensor &mask, double value) {
  std::string op = "rtx.masked_fill";
  checkFloat(op, input, "input");
  checkDefined(op, mask, "mask");
  if (mask.dtype() != DType::I1)
    fail(op, std::string("mask must be i1, got ") + dtypeName(mask.dtype()));
  checkSameShape(op, input, "input", mask, "mask");
  checkOnGpu(op, input, "input");
  checkOnGpu(op, mask, "mask");
  Tensor y = empty(input.shape(), input.dtype());
  const void *src = input.raw();
  void *dst = y.raw();
  const uint8_t *m = static_cast<const uint8_t *>(mask.raw());
  int dtype = static_cast<int>(input.dtype());
  forEach(
      y.numel(), RTX_GPU_BODY(int64_t i) {
        storeElement(dst, dtype, i, m[i] ? value : loadElement(src, dtype, i));
      });
  return y;
}

Tensor gpu::dropout(const Tensor &input, double rate, int64_t seed,
                    const Shape &globalShape,
                    const std::vector<int64_t> &globalOffsets) {
  std::string op = "rtx.dropout";
  checkFloat(op, input, "input");
  checkOnGpu(op, input, "input");
  if (!(rate >= 0.0 && rate < 1.0))
    fail(op, "rate " + std::to_string(rate) + " is outside [0, 1)");
  // The CPU indexer validates the placement; the body repeats its mapping.
  rtxrt::detail::GlobalIndexer indexer(op, input.shape(), globalShape,
                                       globalOffsets);
  if (rate == 0.0)
    return copy(input);
  Dims local = dimsOf(op, input.shape());
  Dims offsets =
      dimsOf(op, globalOffsets.empty() ? std::vector<int64_t>(input.rank(), 0)
                                       : globalOffsets);
  Dims strides =
      dimsOf(op, globalShape.empty() ? std::vector<int64_t>(input.rank(), 0)
                                     : rtxrt::detail::stridesOf(globalShape));
  uint64_t key = randomKey(seed, "dropout");
  Tensor y = empty(input.shape(), input.dtype());
  RTX_GPU_FLOAT_STORAGE(input.dtype(), dropoutT, input, y, rate, key,
                        indexer.isIdentity(), local, offsets, strides);
  return y;
}

Tensor gpu::unaryGrad(UnaryFn fn, const Tensor &input,
                      const Tensor &resultGrad) {
  std::string op = "rtx.unary_grad";
  checkElementwisePair(op, input, "input", resultGrad, "result_grad");
  checkOnGpu(op, input, "input");
  checkOnGpu(op, resultGrad, "result_grad");
#if defined(__CUDACC__)
  if (fastElementwise(input.dtype()))
    return gpu::fast::unaryGrad(fn, input, resultGrad);
#endif
  Tensor dx = empty(input.shape(), input.dtype());
  RTX_GPU_FLOAT_STORAGE(input.dtype(), unaryGradT, fn, input, resultGrad, dx);
  return dx;
}

std::vector<Tensor>
gpu::adamwUpdate(const Tensor &param, const Tensor &grad, const Tensor &expAvg,
                 const Tensor &expAvgSq, const Tensor &step, double lr,
                 double beta1, double beta2, double eps, double weightDecay,
                 int64_t warmupSteps, int64_t decaySteps, double minLr) {
  const std::string op = "rtx.adamw_update";
  const LrSchedule schedule{lr, warmupSteps, decaySteps, minLr};
  rtxrt::detail::checkAdamWArguments(op, param, grad, expAvg, expAvgSq, step,
                                     schedule, beta1, beta2, eps, weightDecay);
  if (step.dtype() != DType::F32) // the kernel reads it on the device
    fail(op, std::string("step must be f32, got ") + dtypeName(step.dtype()));
  for (const Tensor *t : {&param, &grad, &expAvg, &expAvgSq, &step})
    checkOnGpu(op, *t, "every operand");
  Tensor p = toCompute(param), g = toCompute(grad), m = toCompute(expAvg),
         v = toCompute(expAvgSq);
  Tensor newP = empty(param.shape(), p.dtype());
  Tensor newM = empty(grad.shape(), m.dtype());
  Tensor newV = empty(grad.shape(), v.dtype());
  if (p.dtype() == DType::F64)
    adamwP<double>(m.dtype(), p, g, m, v, step, newP, newM, newV, schedule,
                   beta1, beta2, eps, weightDecay);
  else
    adamwP<float>(m.dtype(), p, g, m, v, step, newP, newM, newV, schedule,
                  beta1, beta2, eps, weightDecay);
  return {fromCompute(newP, param.dtype()), fromCompute(newM, grad.dtype()),
          fromCompute(newV, grad.dtype())};
}

Tensor gpu::sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                      double weightDecay) {
  const std::string op = "rtx.sgd_update";
  rtxrt::detail::checkSgdArguments(op, param, grad, lr, weightDecay);
  checkOnGpu(op, param, "param");
  checkOnGpu(op, grad, "grad");
  DType c = grad.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor p = param.dtype() == c ? param : gpu::convert(param, c);
  Tensor g = toCompute(grad);
  Tensor out = empty(param.shape(), c);
  if (c == DType::F64)
    sgdT<double>(p, g, out, lr, weightDecay);
  else
    sgdT<float>(p, g, out, lr, weightDecay);
  return fromCompute(out, param.dtype());
}
