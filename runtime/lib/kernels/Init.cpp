//===- Init.cpp - parameter initialisation --------------------------------===//
//
// Element i of a parameter (row-major over its global shape) is a pure
// function of (seed, name, i) through the counter-based generator, so a rank
// that holds a shard computes exactly the values of that slice of the whole
// tensor, and the values do not depend on the mesh.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"
#include "rtxrt/core/Random.h"

#include "KernelUtils.h"

#include <cmath>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::initParameter(const std::string &name, InitKind kind, double a,
                            double b, int64_t seed, const Shape &shape,
                            DType dtype, const Shape &globalShape,
                            const std::vector<int64_t> &globalOffsets) {
  const std::string op = "rtx.param \"" + name + "\"";
  if (!isFloat(dtype))
    fail(op,
         std::string("parameters are float tensors, got ") + dtypeName(dtype));
  // Negative dimensions and sizes that overflow int64, named with the
  // parameter before anything is allocated or indexed.
  tensorBytes(shape, dtype, op.c_str());
  if (kind == InitKind::Normal && !(b >= 0.0))
    fail(op, "normal std " + std::to_string(b) + " must be >= 0");
  if (kind == InitKind::Uniform && !(a <= b))
    fail(op, "uniform range [" + std::to_string(a) + ", " + std::to_string(b) +
                 ") is empty");
  GlobalIndexer globalIndex(op, shape, globalShape, globalOffsets);
  int64_t n = numElements(shape);
  DType ct = computeType(dtype);
  Tensor values(shape, ct);
  uint64_t key = randomKey(seed, name);
  dispatchCompute(dtype, [&](auto zero) {
    using T = decltype(zero);
    T *p = values.data<T>();
    switch (kind) {
    case InitKind::Zeros:
      break; // Tensor() zero-fills.
    case InitKind::Ones:
    case InitKind::Constant: {
      T v = kind == InitKind::Ones ? T(1) : T(a);
      parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          p[i] = v;
      });
      break;
    }
    case InitKind::Normal:
      parallelFor(n, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          p[i] = T(a + b * normalAt(key, globalIndex(i)));
      });
      break;
    case InitKind::Uniform:
      parallelFor(n, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          p[i] = T(a + (b - a) * uniformAt(key, globalIndex(i)));
      });
      break;
    }
    return 0;
  });
  return fromCompute(values, dtype);
}
