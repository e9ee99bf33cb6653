//===- Tensor.cpp - a dense host tensor -----------------------------------===//
//
// The tensor type, element type helpers and the bf16/f16 conversions. The
// conversions are written with bit operations rather than compiler types
// (_Float16, __bf16) so that they behave the same with every host compiler and
// match the rounding of the CUDA kernels (round to nearest, ties to even).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/Tensor.h"

#include "rtxrt/core/AllocatorStats.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#if defined(__linux__)
#include <sys/mman.h>
#endif

using namespace rtxrt;

size_t rtxrt::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I1:
    return 1;
  }
  throw Error("dtypeSize: unknown dtype");
}

const char *rtxrt::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::I1:
    return "i1";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

bool rtxrt::isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 ||
         dtype == DType::F16;
}

/// The element count of `shape` in `n`; false when it overflows int64.
static bool countElements(const Shape &shape, int64_t &n) {
  n = 1;
  for (int64_t d : shape)
    if (d == 0) {
      n = 0;
      return true;
    }
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return false;
  return true;
}

// A shape that the compiler's verifier let through can still reach the
// runtime from a file, a plan or a kernel's arithmetic: a wrapped count
// would allocate a small (or empty) buffer and index far past it.
int64_t rtxrt::numElements(const Shape &shape) {
  int64_t n;
  if (!countElements(shape, n))
    throw Error("shape " + shapeToString(shape) +
                " has more elements than int64 can count");
  return n;
}

int64_t rtxrt::tensorBytes(const Shape &shape, DType dtype, const char *what) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(std::string(what) + ": negative dimension in shape " +
                  shapeToString(shape));
  int64_t n, bytes;
  if (!countElements(shape, n))
    throw Error(std::string(what) + ": shape " + shapeToString(shape) +
                " has more elements than int64 can count");
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtypeSize(dtype)), &bytes))
    throw Error(std::string(what) + ": a " + dtypeName(dtype) +
                " tensor of shape " + shapeToString(shape) +
                " has more bytes than int64 can count");
  return bytes;
}

std::string rtxrt::shapeToString(const Shape &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

//===----------------------------------------------------------------------===//
// bf16 / f16
//===----------------------------------------------------------------------===//

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t rtxrt::floatToBF16(float value) {
  uint32_t bits = floatBits(value);
  // NaN: keep the sign and the top of the payload, and force a quiet bit so
  // that truncation cannot turn a NaN into an infinity.
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Round to nearest even: add 0x7fff plus the lowest kept bit. Overflow
  // carries into the exponent and yields infinity, as it should.
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float rtxrt::bf16ToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t rtxrt::floatToF16(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t absBits = bits & 0x7fffffffu;
  if (absBits > 0x7f800000u) // NaN: quiet, keep the top payload bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((absBits >> 13) & 0x3ffu));
  if (absBits >= 0x477ff000u) // >= 65520 rounds to infinity (or is one).
    return static_cast<uint16_t>(sign | 0x7c00u);
  int32_t exponent = static_cast<int32_t>(absBits >> 23) - 127;
  if (exponent >= -14) {
    // Normal half: 10 mantissa bits kept out of 23; round to nearest even.
    // A carry out of the mantissa correctly bumps the exponent.
    uint32_t halfBits = ((static_cast<uint32_t>(exponent + 15)) << 10) |
                        ((absBits >> 13) & 0x3ffu);
    uint32_t rest = absBits & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (halfBits & 1u)))
      ++halfBits;
    return static_cast<uint16_t>(sign | halfBits);
  }
  if (exponent < -25) // Below half the smallest subnormal: rounds to zero.
    return sign;
  // Subnormal half: value = m * 2^-24 with m < 1024. The float's mantissa
  // with its implicit bit is 24 bits worth 2^(exponent-23) each.
  uint32_t mantissa = (absBits & 0x7fffffu) | 0x800000u;
  int shift = -exponent - 1; // 14..24: bits dropped to reach units of 2^-24.
  uint32_t halfBits = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (halfBits & 1u)))
    ++halfBits; // May carry into the smallest normal, which is right.
  return static_cast<uint16_t>(sign | halfBits);
}

float rtxrt::f16ToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) // Inf or NaN.
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

namespace {
constexpr size_t kAlignment = 64; // a cache line; any SIMD width
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeThreshold = size_t{32} << 20;
} // namespace

/// An uninitialised buffer of at least `bytes` (at least one byte, so that a
/// defined tensor always has a non-null pointer). glibc reuses freed memory
/// for blocks below its largest mmap threshold (32 MiB), but maps every
/// larger block afresh, and on a VM a fresh 4 KiB page fault costs ~10 us:
/// writing a new 64 MiB result was ~30x slower than the arithmetic (see
/// bench/kernels). Such blocks are aligned to 2 MiB and advised to use
/// transparent huge pages, which cuts the faults 512-fold.
///
/// Freed blocks of 64 KiB and more are kept in a small cache by size and
/// handed out again (PyTorch's CPU and CUDA allocators do the same): a
/// training step allocates the same sizes every step, and reusing a block
/// that is already mapped avoids the page faults altogether.
namespace {
/// Every host tensor buffer, cached or not (rtxrt/core/AllocatorStats.h).
detail::AllocatorCounters &hostCounters() {
  static detail::AllocatorCounters *counters =
      new detail::AllocatorCounters(); // outlives every tensor
  return *counters;
}

class BufferCache {
public:
  static BufferCache &get() {
    static BufferCache *cache = new BufferCache(); // outlives every tensor
    return *cache;
  }
  void *take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty())
      return nullptr;
    void *p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    hostCounters().cached.fetch_sub(size, std::memory_order_relaxed);
    return p;
  }
  void give(void *p, size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + size <= kLimit) {
        free_[size].push_back(p);
        cached_ += size;
        hostCounters().cached.fetch_add(size, std::memory_order_relaxed);
        return;
      }
    }
    std::free(p);
  }

private:
  static constexpr size_t kLimit = size_t{1} << 30;
  std::mutex mutex_;
  std::map<size_t, std::vector<void *>> free_;
  size_t cached_ = 0;
};
constexpr size_t kCacheThreshold = size_t{64} << 10;
} // namespace

static std::shared_ptr<unsigned char> allocateBuffer(size_t bytes) {
  bool huge = bytes >= kHugeThreshold;
  size_t align = huge ? kHugePage : kAlignment;
  size_t size = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
  bool cached = size >= kCacheThreshold;
  void *p = cached ? BufferCache::get().take(size) : nullptr;
  if (!p) {
    p = std::aligned_alloc(align, size);
    if (!p) {
      hostCounters().failures.fetch_add(1, std::memory_order_relaxed);
      throw Error("Tensor: cannot allocate " + std::to_string(bytes) +
                  " bytes");
    }
#ifdef MADV_HUGEPAGE
    if (huge)
      madvise(p, size, MADV_HUGEPAGE); // advice only: failure is harmless
#endif
  }
  hostCounters().allocated(static_cast<int64_t>(size));
  if (!cached)
    return std::shared_ptr<unsigned char>(
        static_cast<unsigned char *>(p), [size](unsigned char *q) {
          hostCounters().freed(static_cast<int64_t>(size));
          std::free(q);
        });
  return std::shared_ptr<unsigned char>(
      static_cast<unsigned char *>(p), [size](unsigned char *q) {
        hostCounters().freed(static_cast<int64_t>(size));
        BufferCache::get().give(q, size);
      });
}

AllocatorStats rtxrt::hostAllocatorStats() { return hostCounters().snapshot(); }
void rtxrt::beginHostPeakWindow() { hostCounters().beginWindow(); }

Tensor Tensor::uninitialized(Shape shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.buffer_ = allocateBuffer(tensorBytes(t.shape_, dtype));
  // RTXRT_POISON_UNINITIALIZED=1 fills these with 0xff bytes (NaN for
  // floats), so a test run with it exposes a kernel that leaves an element
  // of its "uninitialized" result unwritten.
  static const bool poison = [] {
    const char *v = std::getenv("RTXRT_POISON_UNINITIALIZED");
    return v && std::string(v) == "1";
  }();
  if (poison)
    std::memset(t.buffer_.get(), 0xff, t.nbytes());
  return t;
}

Tensor Tensor::wrap(Shape shape, DType dtype,
                    std::shared_ptr<unsigned char> buffer, Device device) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  tensorBytes(t.shape_, dtype);
  if (!buffer)
    throw Error("Tensor::wrap: no buffer");
  t.buffer_ = std::move(buffer);
  return t;
}

/// Host code must not dereference a GPU buffer: say so instead.
static void requireHost(const Tensor &t, const char *what) {
  if (t.onGpu())
    throw Error(std::string(what) + ": the " + dtypeName(t.dtype()) + " " +
                shapeToString(t.shape()) +
                " tensor is in GPU memory (copy it with rtxrt::gpu::toHost)");
}

Tensor::Tensor(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype) {
  size_t bytes = tensorBytes(shape_, dtype_);
  buffer_ = allocateBuffer(bytes);
  std::memset(buffer_.get(), 0, bytes);
}

namespace {
template <typename T> bool dtypeMatches(DType dtype);
template <> bool dtypeMatches<float>(DType d) { return d == DType::F32; }
template <> bool dtypeMatches<double>(DType d) { return d == DType::F64; }
template <> bool dtypeMatches<uint16_t>(DType d) {
  return d == DType::BF16 || d == DType::F16;
}
template <> bool dtypeMatches<uint8_t>(DType d) { return d == DType::I1; }
template <> bool dtypeMatches<bool>(DType d) { return d == DType::I1; }
template <> bool dtypeMatches<int32_t>(DType d) { return d == DType::I32; }
template <> bool dtypeMatches<int64_t>(DType d) { return d == DType::I64; }
} // namespace

template <typename T> T *Tensor::data() {
  requireHost(*this, "Tensor::data");
  if (!dtypeMatches<T>(dtype_))
    throw Error(std::string("Tensor::data: element type does not match the "
                            "tensor's dtype ") +
                dtypeName(dtype_));
  return static_cast<T *>(raw());
}

template <typename T> const T *Tensor::data() const {
  requireHost(*this, "Tensor::data");
  if (!dtypeMatches<T>(dtype_))
    throw Error(std::string("Tensor::data: element type does not match the "
                            "tensor's dtype ") +
                dtypeName(dtype_));
  return static_cast<const T *>(raw());
}

namespace rtxrt {
#define RTXRT_INSTANTIATE_DATA(T)                                              \
  template T *Tensor::data<T>();                                               \
  template const T *Tensor::data<T>() const;
RTXRT_INSTANTIATE_DATA(float)
RTXRT_INSTANTIATE_DATA(double)
RTXRT_INSTANTIATE_DATA(uint16_t)
RTXRT_INSTANTIATE_DATA(uint8_t)
RTXRT_INSTANTIATE_DATA(bool)
RTXRT_INSTANTIATE_DATA(int32_t)
RTXRT_INSTANTIATE_DATA(int64_t)
#undef RTXRT_INSTANTIATE_DATA
} // namespace rtxrt

Tensor Tensor::clone() const {
  requireHost(*this, "Tensor::clone");
  Tensor result;
  result.shape_ = shape_;
  result.dtype_ = dtype_;
  if (buffer_) {
    result.buffer_ = allocateBuffer(nbytes());
    std::memcpy(result.buffer_.get(), buffer_.get(), nbytes());
  }
  return result;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (numElements(shape) != numel())
    throw Error("Tensor::reshaped: cannot view " + shapeToString(shape_) +
                " (" + std::to_string(numel()) + " elements) as " +
                shapeToString(shape));
  for (int64_t d : shape)
    if (d < 0)
      throw Error("Tensor::reshaped: negative dimension in shape " +
                  shapeToString(shape));
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
}

static void checkIndex(const Tensor &t, int64_t i, const char *what) {
  if (!t.defined())
    throw Error(std::string(what) + ": tensor is undefined");
  if (i < 0 || i >= t.numel())
    throw Error(std::string(what) + ": index " + std::to_string(i) +
                " is outside a tensor of shape " + shapeToString(t.shape()));
}

double Tensor::getAsDouble(int64_t i) const {
  checkIndex(*this, i, "Tensor::getAsDouble");
  requireHost(*this, "Tensor::getAsDouble");
  const void *p = raw();
  switch (dtype_) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::F64:
    return static_cast<const double *>(p)[i];
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::I1:
    return static_cast<const uint8_t *>(p)[i] ? 1.0 : 0.0;
  case DType::I32:
    return static_cast<const int32_t *>(p)[i];
  case DType::I64:
    return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  }
  return 0.0;
}

/// Float to integer: truncation toward zero, saturating at the type's range;
/// NaN gives 0. (A plain cast is undefined behaviour out of range.)
template <typename I> static I saturatingCast(double value) {
  if (std::isnan(value))
    return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  // 2^31 or 2^63: the first value that does not fit.
  constexpr double hiExclusive =
      -static_cast<double>(std::numeric_limits<I>::min());
  if (value <= lo)
    return std::numeric_limits<I>::min();
  if (value >= hiExclusive)
    return std::numeric_limits<I>::max();
  return static_cast<I>(value);
}

void Tensor::setFromDouble(int64_t i, double value) {
  checkIndex(*this, i, "Tensor::setFromDouble");
  requireHost(*this, "Tensor::setFromDouble");
  void *p = raw();
  switch (dtype_) {
  case DType::F32:
    static_cast<float *>(p)[i] = static_cast<float>(value);
    break;
  case DType::F64:
    static_cast<double *>(p)[i] = value;
    break;
  case DType::BF16:
    static_cast<uint16_t *>(p)[i] = floatToBF16(static_cast<float>(value));
    break;
  case DType::F16:
    static_cast<uint16_t *>(p)[i] = floatToF16(static_cast<float>(value));
    break;
  case DType::I1:
    static_cast<uint8_t *>(p)[i] = value != 0.0 ? 1 : 0;
    break;
  case DType::I32:
    static_cast<int32_t *>(p)[i] = saturatingCast<int32_t>(value);
    break;
  case DType::I64:
    static_cast<int64_t *>(p)[i] = saturatingCast<int64_t>(value);
    break;
  }
}

namespace {
/// Reads element i of a buffer of `dtype` in the widest type that holds it
/// exactly: int64 for integers, double for floats.
struct Element {
  bool isInt;
  int64_t i;
  double f;
};

Element load(const void *p, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32:
    return {false, 0, static_cast<const float *>(p)[i]};
  case DType::F64:
    return {false, 0, static_cast<const double *>(p)[i]};
  case DType::BF16:
    return {false, 0, bf16ToFloat(static_cast<const uint16_t *>(p)[i])};
  case DType::F16:
    return {false, 0, f16ToFloat(static_cast<const uint16_t *>(p)[i])};
  case DType::I1:
    return {true, static_cast<const uint8_t *>(p)[i] ? 1 : 0, 0.0};
  case DType::I32:
    return {true, static_cast<const int32_t *>(p)[i], 0.0};
  case DType::I64:
    return {true, static_cast<const int64_t *>(p)[i], 0.0};
  }
  return {false, 0, 0.0};
}
} // namespace

Tensor Tensor::to(DType dtype) const {
  if (!defined())
    throw Error("Tensor::to: tensor is undefined");
  requireHost(*this, "Tensor::to");
  if (dtype == dtype_)
    return clone();
  Tensor result(shape_, dtype);
  const void *src = raw();
  void *dst = result.raw();
  int64_t n = numel();
  // The common mixed-precision cases get tight loops; the rest go through
  // the exact widest-type path.
  if (dtype_ == DType::F32 && dtype == DType::BF16) {
    const float *s = static_cast<const float *>(src);
    uint16_t *d = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; ++i)
      d[i] = floatToBF16(s[i]);
    return result;
  }
  if (dtype_ == DType::BF16 && dtype == DType::F32) {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    float *d = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; ++i)
      d[i] = bf16ToFloat(s[i]);
    return result;
  }
  for (int64_t i = 0; i < n; ++i) {
    Element e = load(src, dtype_, i);
    switch (dtype) {
    case DType::I64:
      static_cast<int64_t *>(dst)[i] =
          e.isInt ? e.i : saturatingCast<int64_t>(e.f);
      break;
    case DType::I32:
      static_cast<int32_t *>(dst)[i] =
          e.isInt ? static_cast<int32_t>(e.i) : saturatingCast<int32_t>(e.f);
      break;
    case DType::I1:
      static_cast<uint8_t *>(dst)[i] = (e.isInt ? e.i != 0 : e.f != 0.0);
      break;
    default:
      result.setFromDouble(i, e.isInt ? static_cast<double>(e.i) : e.f);
      break;
    }
  }
  return result;
}

Tensor Tensor::scalar(double value, DType dtype) {
  Tensor result({}, dtype);
  result.setFromDouble(0, value);
  return result;
}

template <typename T>
static Tensor fromValues(const std::vector<T> &values, Shape shape,
                         DType dtype) {
  if (numElements(shape) != static_cast<int64_t>(values.size()))
    throw Error("Tensor::fromVector: " + std::to_string(values.size()) +
                " values do not fill shape " + shapeToString(shape));
  Tensor result(std::move(shape), dtype);
  if (!values.empty())
    std::memcpy(result.raw(), values.data(), values.size() * sizeof(T));
  return result;
}

Tensor Tensor::fromVector(const std::vector<float> &values, Shape shape) {
  return fromValues(values, std::move(shape), DType::F32);
}
Tensor Tensor::fromVector(const std::vector<double> &values, Shape shape) {
  return fromValues(values, std::move(shape), DType::F64);
}
Tensor Tensor::fromVector(const std::vector<int32_t> &values, Shape shape) {
  return fromValues(values, std::move(shape), DType::I32);
}
