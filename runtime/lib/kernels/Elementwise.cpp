//===- Elementwise.cpp - unary, binary, compare, select, dropout ----------===//
//
// Each kernel switches on the op kind once, outside the element loop, so the
// inner loops are plain and vectorisable. The element functions themselves
// are runtime/lib/common/ElementMath.h's, shared with the GPU kernels.
// bf16/f16 inputs are widened to f32, computed, and rounded back once.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"
#include "rtxrt/core/Random.h"

#include "KernelUtils.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

/// Applies `f` to n elements, in parallel chunks.
template <typename T, typename F>
void mapElements(const T *in, T *out, int64_t n, F f) {
  parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = f(in[i]);
  });
}

template <typename T, typename F>
void zipElements(const T *a, const T *b, T *out, int64_t n, F f) {
  parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = f(a[i], b[i]);
  });
}

const char *unaryName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Neg:
    return "rtx.neg";
  case UnaryKind::Exp:
    return "rtx.exp";
  case UnaryKind::Log:
    return "rtx.log";
  case UnaryKind::Sqrt:
    return "rtx.sqrt";
  case UnaryKind::Rsqrt:
    return "rtx.rsqrt";
  case UnaryKind::Tanh:
    return "rtx.tanh";
  case UnaryKind::Sigmoid:
    return "rtx.sigmoid";
  case UnaryKind::Relu:
    return "rtx.relu";
  case UnaryKind::Silu:
    return "rtx.silu";
  case UnaryKind::Gelu:
    return "rtx.gelu";
  case UnaryKind::GeluTanh:
    return "rtx.gelu approximate";
  }
  return "rtx.unary";
}

const char *binaryName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "rtx.add";
  case BinaryKind::Sub:
    return "rtx.sub";
  case BinaryKind::Mul:
    return "rtx.mul";
  case BinaryKind::Div:
    return "rtx.div";
  case BinaryKind::Maximum:
    return "rtx.maximum";
  case BinaryKind::Minimum:
    return "rtx.minimum";
  }
  return "rtx.binary";
}

/// One loop per function (math::visitUnary switches outside it), so the
/// loop body is the function alone and vectorises where it can.
template <typename T>
void unaryLoop(UnaryKind kind, const T *x, T *y, int64_t n) {
  math::visitUnary(kind, [&](auto fn) {
    using F = decltype(fn);
    mapElements(x, y, n, [](T v) { return F::value(v); });
  });
}

template <typename T>
void binaryLoop(BinaryKind kind, const T *a, const T *b, T *y, int64_t n) {
  math::visitBinary(kind, [&](auto fn) {
    using F = decltype(fn);
    zipElements(a, b, y, n, [](T u, T v) { return F::value(u, v); });
  });
}

template <typename T>
void compareLoop(CompareKind kind, const T *a, const T *b, uint8_t *y,
                 int64_t n) {
  auto run = [&](auto pred) {
    parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        y[i] = pred(a[i], b[i]) ? 1 : 0;
    });
  };
  switch (kind) {
  case CompareKind::EQ:
    return run([](T u, T v) { return u == v; });
  case CompareKind::NE:
    return run([](T u, T v) { return u != v; });
  case CompareKind::LT:
    return run([](T u, T v) { return u < v; });
  case CompareKind::LE:
    return run([](T u, T v) { return u <= v; });
  case CompareKind::GT:
    return run([](T u, T v) { return u > v; });
  case CompareKind::GE:
    return run([](T u, T v) { return u >= v; });
  }
}

} // namespace

Tensor rtxrt::unary(UnaryKind kind, const Tensor &input) {
  const std::string op = unaryName(kind);
  checkFloat(op, input, "input");
  Tensor x = toCompute(input);
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    unaryLoop<T>(kind, x.data<T>(), y.data<T>(), x.numel());
    return 0;
  });
  return fromCompute(y, input.dtype());
}

Tensor rtxrt::binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs) {
  const std::string op = binaryName(kind);
  checkDefined(op, lhs, "lhs");
  checkDefined(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  checkSameShape(op, lhs, "lhs", rhs, "rhs");
  int64_t n = lhs.numel();
  // Integer operands: index arithmetic in emitted programs.
  if (lhs.dtype() == DType::I32 || lhs.dtype() == DType::I64) {
    Tensor y = Tensor::uninitialized(lhs.shape(), lhs.dtype());
    auto run = [&](auto zero) {
      using I = decltype(zero);
      const I *a = lhs.data<I>(), *b = rhs.data<I>();
      if (kind == BinaryKind::Div)
        for (int64_t i = 0; i < n; ++i)
          if (b[i] == 0)
            fail(op,
                 "integer division by zero at element " + std::to_string(i));
      binaryLoop<I>(kind, a, b, y.data<I>(), n);
    };
    if (lhs.dtype() == DType::I32)
      run(int32_t{});
    else
      run(int64_t{});
    return y;
  }
  checkFloat(op, lhs, "lhs");
  Tensor a = toCompute(lhs), b = toCompute(rhs);
  Tensor y = Tensor::uninitialized(lhs.shape(), a.dtype());
  dispatchCompute(lhs.dtype(), [&](auto zero) {
    using T = decltype(zero);
    binaryLoop<T>(kind, a.data<T>(), b.data<T>(), y.data<T>(), n);
    return 0;
  });
  return fromCompute(y, lhs.dtype());
}

Tensor rtxrt::swiglu(const Tensor &gate, const Tensor &up) {
  const std::string op = "rtx.swiglu";
  checkElementwisePair(op, gate, "gate", up, "up");
  Tensor g = toCompute(gate), u = toCompute(up);
  Tensor y = Tensor::uninitialized(gate.shape(), g.dtype());
  dispatchCompute(gate.dtype(), [&](auto zero) {
    using T = decltype(zero);
    zipElements(g.data<T>(), u.data<T>(), y.data<T>(), g.numel(),
                [](T a, T b) { return math::SwiGLU::value(a, b); });
    return 0;
  });
  return fromCompute(y, gate.dtype());
}

Tensor rtxrt::compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs) {
  const std::string op = "rtx.compare";
  checkDefined(op, lhs, "lhs");
  checkDefined(op, rhs, "rhs");
  checkSameDType(op, lhs, "lhs", rhs, "rhs");
  checkSameShape(op, lhs, "lhs", rhs, "rhs");
  Tensor y = Tensor::uninitialized(lhs.shape(), DType::I1);
  uint8_t *py = y.data<uint8_t>();
  int64_t n = lhs.numel();
  switch (lhs.dtype()) {
  case DType::F32:
    compareLoop(kind, lhs.data<float>(), rhs.data<float>(), py, n);
    break;
  case DType::F64:
    compareLoop(kind, lhs.data<double>(), rhs.data<double>(), py, n);
    break;
  case DType::BF16:
  case DType::F16: {
    // Widening is exact, so comparing the f32 values is comparing the
    // 16-bit values.
    Tensor a = lhs.to(DType::F32), b = rhs.to(DType::F32);
    compareLoop(kind, a.data<float>(), b.data<float>(), py, n);
    break;
  }
  case DType::I1:
    compareLoop(kind, lhs.data<uint8_t>(), rhs.data<uint8_t>(), py, n);
    break;
  case DType::I32:
    compareLoop(kind, lhs.data<int32_t>(), rhs.data<int32_t>(), py, n);
    break;
  case DType::I64:
    compareLoop(kind, lhs.data<int64_t>(), rhs.data<int64_t>(), py, n);
    break;
  }
  return y;
}

namespace {
/// result[i] = cond[i] ? a[i] : b[i] on raw elements of `size` bytes.
template <typename E>
void selectLoop(const uint8_t *cond, const E *a, const E *b, E *y, int64_t n) {
  parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = cond[i] ? a[i] : b[i];
  });
}

void selectBytes(const uint8_t *cond, const void *a, const void *b, void *y,
                 int64_t n, size_t size) {
  switch (size) {
  case 1:
    return selectLoop(cond, static_cast<const uint8_t *>(a),
                      static_cast<const uint8_t *>(b),
                      static_cast<uint8_t *>(y), n);
  case 2:
    return selectLoop(cond, static_cast<const uint16_t *>(a),
                      static_cast<const uint16_t *>(b),
                      static_cast<uint16_t *>(y), n);
  case 4:
    return selectLoop(cond, static_cast<const uint32_t *>(a),
                      static_cast<const uint32_t *>(b),
                      static_cast<uint32_t *>(y), n);
  default:
    return selectLoop(cond, static_cast<const uint64_t *>(a),
                      static_cast<const uint64_t *>(b),
                      static_cast<uint64_t *>(y), n);
  }
}
} // namespace

Tensor rtxrt::where(const Tensor &condition, const Tensor &onTrue,
                    const Tensor &onFalse) {
  const std::string op = "rtx.where";
  checkDefined(op, condition, "condition");
  checkDefined(op, onTrue, "on_true");
  checkDefined(op, onFalse, "on_false");
  if (condition.dtype() != DType::I1)
    fail(op, std::string("condition must be i1, got ") +
                 dtypeName(condition.dtype()));
  checkSameDType(op, onTrue, "on_true", onFalse, "on_false");
  checkSameShape(op, onTrue, "on_true", onFalse, "on_false");
  checkSameShape(op, condition, "condition", onTrue, "on_true");
  Tensor y = Tensor::uninitialized(onTrue.shape(), onTrue.dtype());
  selectBytes(condition.data<uint8_t>(), onTrue.raw(), onFalse.raw(), y.raw(),
              y.numel(), dtypeSize(y.dtype()));
  return y;
}

Tensor rtxrt::maskedFill(const Tensor &input, const Tensor &mask,
                         double value) {
  const std::string op = "rtx.masked_fill";
  checkFloat(op, input, "input");
  checkDefined(op, mask, "mask");
  if (mask.dtype() != DType::I1)
    fail(op, std::string("mask must be i1, got ") + dtypeName(mask.dtype()));
  checkSameShape(op, input, "input", mask, "mask");
  // The fill value in the input's dtype (rounded once; infinities stay).
  Tensor fill = Tensor::scalar(value, input.dtype());
  Tensor y = Tensor::uninitialized(input.shape(), input.dtype());
  int64_t n = input.numel();
  size_t size = dtypeSize(input.dtype());
  // Select between the input and a broadcast fill value, element by element.
  auto run = [&](auto zero) {
    using E = decltype(zero);
    E v;
    std::memcpy(&v, fill.raw(), sizeof(E));
    const E *x = static_cast<const E *>(input.raw());
    const uint8_t *m = mask.data<uint8_t>();
    E *out = static_cast<E *>(y.raw());
    parallelFor(n, kElementGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = m[i] ? v : x[i];
    });
  };
  if (size == 2)
    run(uint16_t{});
  else if (size == 4)
    run(uint32_t{});
  else
    run(uint64_t{});
  return y;
}

Tensor rtxrt::convert(const Tensor &input, DType to) {
  checkDefined("rtx.convert", input, "input");
  return input.to(to);
}

Tensor rtxrt::dropout(const Tensor &input, double rate, int64_t seed,
                      const Shape &globalShape,
                      const std::vector<int64_t> &globalOffsets) {
  const std::string op = "rtx.dropout";
  checkFloat(op, input, "input");
  if (!(rate >= 0.0 && rate < 1.0))
    fail(op, "rate " + std::to_string(rate) + " is outside [0, 1)");
  GlobalIndexer globalIndex(op, input.shape(), globalShape, globalOffsets);
  if (rate == 0.0)
    return input.clone();
  uint64_t key = randomKey(seed, "dropout");
  Tensor x = toCompute(input);
  Tensor y = Tensor::uninitialized(input.shape(), x.dtype());
  int64_t n = input.numel();
  dispatchCompute(input.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    T *py = y.data<T>();
    const T scale = T(1.0 / (1.0 - rate));
    parallelFor(n, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        uint64_t g = static_cast<uint64_t>(globalIndex(i));
        py[i] = uniformAt(key, g) < rate ? T(0) : px[i] * scale;
      }
    });
    return 0;
  });
  return fromCompute(y, input.dtype());
}
