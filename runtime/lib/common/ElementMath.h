//===- ElementMath.h - element math of the CPU and GPU kernels -*- C++ -*-===//
//
// Private to the runtime, header-only, compiled for the host and (under
// nvcc) for the device. Every formula of the elementwise ops, their
// derivatives and the row kernels (softmax, attention, cross-entropy) is
// written here once; the CPU kernels (runtime/lib/kernels/) and the GPU
// kernels (runtime/lib/gpu/, also built as the host emulation) both call it,
// so the CPU and the emulated GPU compute the same formulas with the same
// operations in the same order.
//
// The approximation policy (the one place that says it):
//
//   function                          f32                      f64
//   --------------------------------  -----------------------  ---------
//   exp of softmax, attention and     fastExp = expApprox      libm exp
//   cross-entropy rows (rowExp)       (Cephes expf, <= 2 ulp)
//   tanh inside gelu_tanh (value      fastTanh = tanhApprox    libm tanh
//   and derivative)                   (Cephes tanhf, <= 2 ulp)
//   rtx.exp, rtx.tanh, sigmoid, silu, libm (expf, tanhf, logf,  libm
//   log, gelu's erf and exp, sqrt     erff, sqrtf)
//
// Why these: the row exponentials and GELU-tanh are the hot loops of a
// transformer step, and libm's expf/tanhf are opaque calls that keep those
// loops scalar; the Cephes algorithms are plain arithmetic, so the loops
// vectorise, and they give the same bits in a vector body, a scalar tail and
// the host emulation. The ops that *are* exp or tanh keep libm's results
// (and range: expApprox overflows at 88.38 where expf does at 88.72), as do
// the rarer functions. Both devices follow this table: there is no GPU-only
// or CPU-only variant of any function.
//
// What "the same bits" needs besides the same source: the same decisions to
// fuse a * b + c into one FMA. librtxrt and the emulation are built with the
// same floating-point flags (RTXRT_FLOAT_FLAGS in runtime/CMakeLists.txt:
// -march=native, -fno-math-errno; clang fuses within an expression, decided
// per source expression, so both fuse alike; with GCC, whose fusing depends
// on the surrounding code, contraction is off). libm calls are the same
// glibc functions on both host sides. A real GPU computes these formulas too,
// but nvcc fuses on its own, CUDA's libm has its own ulp and cuBLAS its own
// summation order, so GPU and CPU agree there to rounding, not bit for bit.
//
// NaN: every function here returns NaN for a NaN input (relu and its
// derivative included, as torch.relu does).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMMON_ELEMENTMATH_H
#define RTXRT_LIB_COMMON_ELEMENTMATH_H

#include "rtxrt/kernels/Kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

// Always inlined: each library then compiles every formula with its own
// flags. An inline function left out of line is one COMDAT copy per
// program, taken from whichever object the linker saw first, which may be
// one built with other flags (a test, say) and then computes other bits.
#if defined(__CUDACC__)
#define RTX_MATH_FN __host__ __device__ __forceinline__
#else
#define RTX_MATH_FN inline __attribute__((always_inline))
#endif

namespace rtxrt {
namespace math {

// --- libm, overloaded for f32 and f64, callable on both sides ----------------
RTX_MATH_FN float libExp(float v) { return ::expf(v); }
RTX_MATH_FN double libExp(double v) { return ::exp(v); }
RTX_MATH_FN float libLog(float v) { return ::logf(v); }
RTX_MATH_FN double libLog(double v) { return ::log(v); }
RTX_MATH_FN float libSqrt(float v) { return ::sqrtf(v); }
RTX_MATH_FN double libSqrt(double v) { return ::sqrt(v); }
RTX_MATH_FN float libTanh(float v) { return ::tanhf(v); }
RTX_MATH_FN double libTanh(double v) { return ::tanh(v); }
RTX_MATH_FN float libErf(float v) { return ::erff(v); }
RTX_MATH_FN double libErf(double v) { return ::erf(v); }
RTX_MATH_FN float fmaxOf(float a, float b) { return ::fmaxf(a, b); }
RTX_MATH_FN double fmaxOf(double a, double b) { return ::fmax(a, b); }

// --- the approximations ------------------------------------------------------

/// exp for f32: Cephes' expf (range reduction by ln 2 in two parts, degree-6
/// polynomial, scaling by 2^n built in the exponent bits); within 2 ulp of
/// exp on [-87.3, 88.37]. Below that it returns 0 (exp's results there are
/// subnormal, < 1.2e-38), above it +inf; exp(-inf) = 0 and NaN stays NaN.
RTX_MATH_FN float expApprox(float x) {
  const float kMax = 88.3762626647949f;  // log(2^127.5)
  const float kMin = -87.3365447504019f; // log(FLT_MIN)
  float c = ::fminf(::fmaxf(x, kMin), kMax);
  float n = ::floorf(c * 1.44269504088896341f + 0.5f);
  float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  float er = p * r * r + r + 1.0f;
  // n is in [-126, 127] here (fmin/fmax return the bound for a NaN x).
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
#if defined(__CUDA_ARCH__)
  float scale = __int_as_float(bits);
#else
  float scale;
  memcpy(&scale, &bits, sizeof scale);
#endif
  float y = er * scale;
  if (x < kMin)
    y = 0.0f;
  if (x > kMax)
    y = __builtin_huge_valf();
  if (x != x)
    y = x;
  return y;
}
/// f64 has no approximation: libm's exp.
RTX_MATH_FN double expApprox(double x) { return ::exp(x); }

/// tanh for f32: Cephes' tanhf, an odd polynomial below |x| = 0.625 and
/// 1 - 2 / (exp(2|x|) + 1) above; about 2 ulp. Both paths are computed and
/// one is selected (so a loop of it vectorises). NaN stays NaN.
RTX_MATH_FN float tanhApprox(float x) {
  float a = ::fabsf(x);
  // exp(2a), clamped where tanh is +-1 in f32 anyway.
  float large = 1.0f - 2.0f / (expApprox(::fminf(2.0f * a, 88.0f)) + 1.0f);
  float z = x * x;
  float q = -5.70498872745E-3f;
  q = q * z + 2.06390887954E-2f;
  q = q * z - 5.37397155531E-2f;
  q = q * z + 1.33314422036E-1f;
  q = q * z - 3.33332819422E-1f;
  float small = q * z * x + x;
  float signedLarge = x < 0.0f ? -large : large;
  float y = a < 0.625f ? small : signedLarge;
  return x != x ? x : y; // NaN stays NaN
}
/// f64 has no approximation: libm's tanh.
RTX_MATH_FN double tanhApprox(double x) { return ::tanh(x); }

// The policy's two flavours, named for what the table above says.
template <typename T> RTX_MATH_FN T fastExp(T v) { return expApprox(v); }
template <typename T> RTX_MATH_FN T fastTanh(T v) { return tanhApprox(v); }
/// The exp of the row kernels (softmax, attention, cross-entropy and their
/// gradients).
template <typename T> RTX_MATH_FN T rowExp(T v) { return fastExp(v); }

// --- the unary functions: value(v) and grad(v, g) = g * f'(v) ----------------
// Constants are in T so that f32 stays in f32.

struct Neg {
  template <typename T> RTX_MATH_FN static T value(T v) { return -v; }
};

struct Exp {
  template <typename T> RTX_MATH_FN static T value(T v) { return libExp(v); }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    return g * libExp(v);
  }
};

struct Log {
  template <typename T> RTX_MATH_FN static T value(T v) { return libLog(v); }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) { return g / v; }
};

struct Sqrt {
  template <typename T> RTX_MATH_FN static T value(T v) { return libSqrt(v); }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    return g * T(0.5) / libSqrt(v);
  }
};

struct Rsqrt {
  template <typename T> RTX_MATH_FN static T value(T v) {
    return T(1) / libSqrt(v);
  }
  /// -0.5 x^-1.5 as -0.5 r^3 with r = 1/sqrt(x).
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    T r = T(1) / libSqrt(v);
    return -T(0.5) * g * r * r * r;
  }
};

struct Tanh {
  template <typename T> RTX_MATH_FN static T value(T v) { return libTanh(v); }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    T t = libTanh(v);
    return g * (T(1) - t * t);
  }
};

struct Sigmoid {
  template <typename T> RTX_MATH_FN static T value(T v) {
    return T(1) / (T(1) + libExp(-v));
  }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    T s = value(v);
    return g * s * (T(1) - s);
  }
};

/// NaN stays NaN (as in torch.relu), and gives a NaN gradient.
struct Relu {
  template <typename T> RTX_MATH_FN static T value(T v) {
    return v > T(0) || v != v ? v : T(0);
  }
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    return v > T(0) ? g : (v != v ? v : T(0));
  }
};

struct Silu {
  template <typename T> RTX_MATH_FN static T value(T v) {
    return v / (T(1) + libExp(-v));
  }
  /// s (1 + x (1 - s)) with s = sigmoid(x).
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    T s = T(1) / (T(1) + libExp(-v));
    return g * s * (T(1) + v * (T(1) - s));
  }
};

/// x Phi(x) with the exact normal CDF.
struct Gelu {
  template <typename T> RTX_MATH_FN static T value(T v) {
    const T invSqrt2 = T(0.70710678118654752440084436210485);
    return T(0.5) * v * (T(1) + libErf(v * invSqrt2));
  }
  /// Phi(x) + x phi(x).
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    const T invSqrt2 = T(0.70710678118654752440084436210485);
    const T invSqrt2Pi = T(0.39894228040143267793994605993438);
    T cdf = T(0.5) * (T(1) + libErf(v * invSqrt2));
    T pdf = invSqrt2Pi * libExp(-T(0.5) * v * v);
    return g * (cdf + v * pdf);
  }
};

/// x/2 (1 + tanh(u)), u = k (x + c x^3), with the fast tanh (the policy).
struct GeluTanh {
  static constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
  static constexpr double kCubic = 0.044715;
  template <typename T> RTX_MATH_FN static T value(T v) {
    const T k = T(kSqrt2OverPi), c = T(kCubic);
    return T(0.5) * v * (T(1) + fastTanh(k * (v + c * v * v * v)));
  }
  /// (1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) k (1 + 3 c x^2).
  template <typename T> RTX_MATH_FN static T grad(T v, T g) {
    const T k = T(kSqrt2OverPi), c = T(kCubic), half = T(0.5), one = T(1);
    T t = fastTanh(k * (v + c * v * v * v));
    return g * (half * (one + t) +
                half * v * (one - t * t) * k * (one + T(3) * c * v * v));
  }
};

/// Calls visit(F{}) with the function of `kind` (a type with static value
/// and grad): the CPU kernels switch once outside their element loop, the
/// GPU kernels per element (unaryValue below); both reach the same F.
template <typename Visitor>
RTX_MATH_FN auto visitUnary(UnaryKind kind, Visitor &&visit)
    -> decltype(visit(Neg{})) {
  switch (kind) {
  case UnaryKind::Neg:
    return visit(Neg{});
  case UnaryKind::Exp:
    return visit(Exp{});
  case UnaryKind::Log:
    return visit(Log{});
  case UnaryKind::Sqrt:
    return visit(Sqrt{});
  case UnaryKind::Rsqrt:
    return visit(Rsqrt{});
  case UnaryKind::Tanh:
    return visit(Tanh{});
  case UnaryKind::Sigmoid:
    return visit(Sigmoid{});
  case UnaryKind::Relu:
    return visit(Relu{});
  case UnaryKind::Silu:
    return visit(Silu{});
  case UnaryKind::Gelu:
    return visit(Gelu{});
  case UnaryKind::GeluTanh:
    return visit(GeluTanh{});
  }
  return visit(Neg{}); // not reached: every kind is handled
}

/// The same for the functions of rtx.unary_grad.
template <typename Visitor>
RTX_MATH_FN auto visitUnaryFn(UnaryFn fn, Visitor &&visit)
    -> decltype(visit(Exp{})) {
  switch (fn) {
  case UnaryFn::Exp:
    return visit(Exp{});
  case UnaryFn::Log:
    return visit(Log{});
  case UnaryFn::Sqrt:
    return visit(Sqrt{});
  case UnaryFn::Rsqrt:
    return visit(Rsqrt{});
  case UnaryFn::Tanh:
    return visit(Tanh{});
  case UnaryFn::Sigmoid:
    return visit(Sigmoid{});
  case UnaryFn::Relu:
    return visit(Relu{});
  case UnaryFn::Silu:
    return visit(Silu{});
  case UnaryFn::Gelu:
    return visit(Gelu{});
  case UnaryFn::GeluTanh:
    return visit(GeluTanh{});
  }
  return visit(Exp{}); // not reached: every function is handled
}

namespace detail {
template <typename T> struct ApplyValue {
  T v;
  template <typename F> RTX_MATH_FN T operator()(F) const {
    return F::value(v);
  }
};
template <typename T> struct ApplyGrad {
  T v, g;
  template <typename F> RTX_MATH_FN T operator()(F) const {
    return F::grad(v, g);
  }
};
} // namespace detail

/// f(v) for the function of `kind`.
template <typename T> RTX_MATH_FN T unaryValue(UnaryKind kind, T v) {
  return visitUnary(kind, detail::ApplyValue<T>{v});
}
/// g * f'(v) for the function `fn` of rtx.unary_grad.
template <typename T> RTX_MATH_FN T unaryGradValue(UnaryFn fn, T v, T g) {
  return visitUnaryFn(fn, detail::ApplyGrad<T>{v, g});
}

// --- the binary functions (also used on integers) ----------------------------

struct Add {
  template <typename T> RTX_MATH_FN static T value(T u, T v) { return u + v; }
};
struct Sub {
  template <typename T> RTX_MATH_FN static T value(T u, T v) { return u - v; }
};
struct Mul {
  template <typename T> RTX_MATH_FN static T value(T u, T v) { return u * v; }
};
struct Div {
  template <typename T> RTX_MATH_FN static T value(T u, T v) { return u / v; }
};
/// max/min that propagate NaN like torch.maximum/minimum.
struct Maximum {
  template <typename T> RTX_MATH_FN static T value(T u, T v) {
    return (u > v || u != u) ? u : v;
  }
};
struct Minimum {
  template <typename T> RTX_MATH_FN static T value(T u, T v) {
    return (u < v || u != u) ? u : v;
  }
};

/// Llama's gated linear unit, silu(gate) * up: one definition for the fused
/// rtx.swiglu kernels of both devices (its gradient is composed of Silu's
/// and a product by the op's VJP).
struct SwiGLU {
  template <typename T> RTX_MATH_FN static T value(T gate, T up) {
    return Silu::value(gate) * up;
  }
};

template <typename Visitor>
RTX_MATH_FN auto visitBinary(BinaryKind kind, Visitor &&visit)
    -> decltype(visit(Add{})) {
  switch (kind) {
  case BinaryKind::Add:
    return visit(Add{});
  case BinaryKind::Sub:
    return visit(Sub{});
  case BinaryKind::Mul:
    return visit(Mul{});
  case BinaryKind::Div:
    return visit(Div{});
  case BinaryKind::Maximum:
    return visit(Maximum{});
  case BinaryKind::Minimum:
    return visit(Minimum{});
  }
  return visit(Add{}); // not reached: every kind is handled
}

namespace detail {
template <typename T> struct ApplyBinary {
  T u, v;
  template <typename F> RTX_MATH_FN T operator()(F) const {
    return F::value(u, v);
  }
};
} // namespace detail

/// f(u, v) for the function of `kind`.
template <typename T> RTX_MATH_FN T binaryValue(BinaryKind kind, T u, T v) {
  return visitBinary(kind, detail::ApplyBinary<T>{u, v});
}

// --- reductions in a fixed order ---------------------------------------------
// A running sum `s += x[i]` is a chain of dependent additions the compiler
// may not reorder, so loops written with one stay scalar. These are written
// so that the loops around them vectorise, with results that depend on the
// data only (never on the thread count, the vector width or the device).

/// Partial results per reduction: 8 doubles fill one AVX-512 register or
/// two AVX2 ones.
constexpr int kLanes = 8;

/// The sum of term(0) + ... + term(n - 1) in double, term(i) going to lane
/// i % kLanes and the lanes added pairwise in a fixed order, then the tail.
template <typename Term>
RTX_MATH_FN double laneSum(int64_t n, const Term &term) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += term(i + l);
  double tail = 0.0;
  for (; i < n; ++i)
    tail += term(i);
  return (((lane[0] + lane[1]) + (lane[2] + lane[3])) +
          ((lane[4] + lane[5]) + (lane[6] + lane[7]))) +
         tail;
}

/// The largest of x[0], x[stride], ..., x[(n-1) stride] by fmax (NaNs are
/// skipped, as fmax does); -inf for n = 0. max is exact, so the lanes change
/// nothing but speed.
template <typename T>
RTX_MATH_FN T laneMax(const T *x, int64_t n, int64_t stride = 1) {
  T lane[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lane[l] = -__builtin_huge_val();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] = fmaxOf(lane[l], x[(i + l) * stride]);
  T max = -__builtin_huge_val();
  for (; i < n; ++i)
    max = fmaxOf(max, x[i * stride]);
  for (int l = 0; l < kLanes; ++l)
    max = fmaxOf(max, lane[l]);
  return max;
}

// --- rows --------------------------------------------------------------------

namespace detail {
/// softmaxRow's body; Unit makes the stride the constant 1 (a loop over
/// contiguous elements, which vectorises).
template <bool Unit, typename T>
RTX_MATH_FN void softmaxRowWith(const T *x, T *y, int64_t n, int64_t stride) {
  const int64_t s = Unit ? 1 : stride;
  T max = laneMax(x, n, s);
  for (int64_t i = 0; i < n; ++i)
    y[i * s] = rowExp(x[i * s] - max);
  double sum = laneSum(n, [&](int64_t i) { return double(y[i * s]); });
  T inv = T(1.0 / sum);
  for (int64_t i = 0; i < n; ++i)
    y[i * s] *= inv;
}
} // namespace detail

/// Softmax over x[0], x[stride], ..., x[(n-1) stride] into y (same
/// strides; y may be x). A row that is all -inf has no finite max:
/// exp(x - max) is NaN, as in PyTorch, rather than a silent uniform
/// distribution.
template <typename T>
RTX_MATH_FN void softmaxRow(const T *x, T *y, int64_t n, int64_t stride) {
  if (stride == 1)
    detail::softmaxRowWith<true>(x, y, n, stride);
  else
    detail::softmaxRowWith<false>(x, y, n, stride);
}

/// rtx.softmax_grad along one row: dx = y (dy - sum(dy y)).
template <typename T>
RTX_MATH_FN void softmaxGradRow(const T *y, const T *dy, T *dx, int64_t n,
                                int64_t stride) {
  double dot = laneSum(n, [&](int64_t i) {
    return static_cast<double>(dy[i * stride]) * y[i * stride];
  });
  for (int64_t i = 0; i < n; ++i)
    dx[i * stride] =
        T(static_cast<double>(y[i * stride]) * (dy[i * stride] - dot));
}

/// One row of attention probabilities, in place: softmax over the scores
/// row[0..visible) (the keys a causal row sees; all of them otherwise) and
/// zeros in row[visible..length). The gradients recompute the
/// probabilities with this same function, so they equal the forward's.
template <typename T>
RTX_MATH_FN void attentionSoftmaxRow(T *row, int64_t visible, int64_t length) {
  softmaxRow(row, row, visible, int64_t{1});
  for (int64_t j = visible; j < length; ++j)
    row[j] = T(0);
}

/// dS = P (dP - rowsum(P dP)) along one row of attention, in place in dp
/// (the gradient's scale is applied by the GEMMs that use dS).
template <typename T>
RTX_MATH_FN void attentionGradRow(const T *p, T *dp, int64_t length) {
  softmaxGradRow(p, dp, dp, length, int64_t{1});
}

/// The statistics of rtx.layernorm (centred) and rtx.rmsnorm over one row
/// x[0..d), in double: the mean (0 when not centred) and 1/sqrt(mean of
/// (x - mean)^2 + epsilon). Two passes, not E[x^2] - mean^2: no
/// cancellation for large means.
template <typename T>
RTX_MATH_FN void normStatistics(const T *x, int64_t d, double epsilon,
                                bool centred, double &mean, double &rstd) {
  double m = 0.0;
  if (centred)
    m = laneSum(d, [&](int64_t i) { return double(x[i]); }) / double(d);
  double sq = laneSum(d, [&](int64_t i) {
    double c = x[i] - m;
    return c * c;
  });
  mean = m;
  rstd = 1.0 / libSqrt(sq / double(d) + epsilon);
}

/// One element of rtx.layernorm, centred in double (rounding the mean to
/// f32 would shift every element by up to half an ulp of the mean, a large
/// relative error when the mean is large against the spread).
template <typename T>
RTX_MATH_FN T layerNormValue(T x, double mean, double rstd, T scale, T bias) {
  return T((x - mean) * rstd) * scale + bias;
}
template <typename T>
RTX_MATH_FN T layerNormValue(T x, double mean, double rstd, T scale) {
  return T((x - mean) * rstd) * scale;
}
/// One element of rtx.rmsnorm, with s = T(rstd).
template <typename T> RTX_MATH_FN T rmsNormValue(T x, T s, T scale) {
  return x * s * scale;
}

/// The statistics of a softmax over row[0..n): its max, and the sum of
/// exp(row - max) in double, summed a chunk of kStatsChunk at a time in
/// fixed lanes, in chunk order. rtx.cross_entropy, rtx.vocab_logit_stats'
/// users and the gradients all use this. On the host the exponentials of a
/// chunk go to a buffer first (a loop that vectorises); on the device they
/// are summed as computed. Both give the same values in the same order.
constexpr int64_t kStatsChunk = 512;
template <typename T>
RTX_MATH_FN void softmaxStatistics(const T *row, int64_t n, T &max,
                                   double &sumExp) {
  max = laneMax(row, n);
  const T m = max;
  double sum = 0.0;
#if defined(__CUDA_ARCH__)
  for (int64_t c = 0; c < n; c += kStatsChunk) {
    int64_t len = n - c < kStatsChunk ? n - c : kStatsChunk;
    sum +=
        laneSum(len, [&](int64_t i) { return double(rowExp(row[c + i] - m)); });
  }
#else
  T e[kStatsChunk];
  for (int64_t c = 0; c < n; c += kStatsChunk) {
    int64_t len = n - c < kStatsChunk ? n - c : kStatsChunk;
    for (int64_t i = 0; i < len; ++i)
      e[i] = rowExp(row[c + i] - m);
    sum += laneSum(len, [&](int64_t i) { return double(e[i]); });
  }
#endif
  sumExp = sum;
}

/// The loss of one token from its row's statistics: max + log(sum) -
/// logit of the label, in double.
RTX_MATH_FN double crossEntropyLoss(double max, double sumExp,
                                    double labelLogit) {
  return max + ::log(sumExp) - labelLogit;
}

/// One row of the cross-entropy gradient: drow[i] = factor (exp(row[i] -
/// max) / sum - [i == label]) with scale = factor / sum (`label` local to
/// the row; outside [0, n) when another shard owns it).
template <typename T>
RTX_MATH_FN void crossEntropyGradRow(const T *row, T *drow, int64_t n, T max,
                                     double scale, double factor,
                                     int64_t label) {
  for (int64_t i = 0; i < n; ++i)
    drow[i] =
        T(double(rowExp(row[i] - max)) * scale - (i == label ? factor : 0.0));
}

} // namespace math
} // namespace rtxrt

#endif // RTXRT_LIB_COMMON_ELEMENTMATH_H
