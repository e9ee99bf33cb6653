//===- CtaEmulation.h - CUDA CTAs on the host, for tests --------*- C++ -*-===//
//
// Runs a CUDA kernel written for shared memory, barriers, warp shuffles and
// the tensor cores' mma.sync (runtime/lib/gpu/fast/FlashAttentionKernels.h)
// on the host, where CI has no GPU. Each CUDA thread of a CTA is a fiber
// (ucontext) on the calling thread, run until it waits at a barrier, then
// the next one: __syncthreads and __syncwarp are real barriers, shuffles
// and mma.sync exchange registers through the warp, and mma.sync computes
// each lane's accumulators from the other lanes' fragments by the PTX ISA's
// table ("Matrix fragments for mma.m16n8k16 with floating point type"),
// written here independently of the kernels' own indexing.
//
// What it catches: a missing barrier (a thread runs on until it blocks, so
// it reads a tile the others have not written yet), a barrier not every
// thread reaches (reported as a deadlock), reads of shared memory nothing
// wrote (it starts as NaN bytes), and every index, mask and fragment error.
// Slow: for small shapes only.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TEST_UNIT_RUNTIME_CTAEMULATION_H
#define RTX_TEST_UNIT_RUNTIME_CTAEMULATION_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ucontext.h>

// --- the CUDA names the kernels use ------------------------------------------

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define RTX_FLASH_SHARED_MEMORY(name)                                          \
  unsigned char *name = ::rtxrt::test::cta::sharedMemory()

struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
struct Index3 {
  unsigned x = 0, y = 0, z = 0;
};

/// bf16 and f16 as their bits, rounded to nearest even as the CUDA
/// conversions are.
struct __nv_bfloat16 {
  uint16_t bits;
};
struct __half {
  uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 x) {
  uint32_t u = uint32_t(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f))
    return {uint16_t(0x7fc0)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {uint16_t(u >> 16)};
}
inline float __half2float(__half x) {
  uint32_t sign = uint32_t(x.bits & 0x8000u) << 16;
  uint32_t exponent = (x.bits >> 10) & 0x1fu, mantissa = x.bits & 0x3ffu;
  if (exponent == 0) {
    float v = std::ldexp(float(mantissa), -24);
    return sign ? -v : v;
  }
  uint32_t u = exponent == 31
                   ? sign | 0x7f800000u | (mantissa << 13)
                   : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __half __float2half(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) // inf, NaN
    return {uint16_t(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u))};
  if (a >= 0x477ff000u) // rounds past 65504
    return {uint16_t(sign | 0x7c00u)};
  if (a < 0x38800000u) { // below 2^-14: a subnormal half (steps of 2^-24)
    float magnitude;
    std::memcpy(&magnitude, &a, 4);
    return {uint16_t(sign | uint16_t(std::nearbyint(magnitude * 16777216.0f)))};
  }
  uint32_t h = ((((a >> 23) - 127 + 15) << 10) | ((a & 0x7fffffu) >> 13));
  uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the right rounding too
  return {uint16_t(sign | h)};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 x) { return x.bits; }
inline unsigned short __half_as_ushort(__half x) { return x.bits; }

namespace rtxrt::test::cta {

void yieldToScheduler();
/// Counts barrier arrivals and finished threads: the scheduler's proof of
/// progress.
inline uint64_t progress = 0;

/// A reusable barrier of `count` threads.
class Barrier {
public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    ++progress;
    uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      return;
    }
    while (generation_ == generation)
      yieldToScheduler();
  }

private:
  const int count_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

/// What the lanes of one warp exchange.
struct Warp {
  Barrier barrier{32};
  float values[32];
  uint32_t a[32][4], b[32][2];
};

struct Cta {
  explicit Cta(int threads, size_t sharedBytes)
      : barrier(threads), warps(threads / 32), shared(sharedBytes + 16) {
    std::memset(shared.data(), 0xff, shared.size()); // NaN in f32, bf16, f16
  }
  Barrier barrier;
  std::vector<Warp> warps;
  std::vector<unsigned char> shared;
};

/// The CTA being run, its threads (fibers) and the scheduler's context.
struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
};
inline Cta *currentCta = nullptr;
inline std::vector<Fiber> *fibers = nullptr;
inline int currentFiber = 0;
inline ucontext_t schedulerContext;
inline std::function<void()> fiberBody;

inline void yieldToScheduler() {
  swapcontext(&(*fibers)[currentFiber].context, &schedulerContext);
}
inline void fiberEntry() {
  fiberBody();
  ++progress;
  (*fibers)[currentFiber].done = true;
} // returns to schedulerContext (uc_link)

inline unsigned char *sharedMemory() {
  auto address = reinterpret_cast<uintptr_t>(currentCta->shared.data());
  return currentCta->shared.data() + (16 - address % 16) % 16;
}

} // namespace rtxrt::test::cta

inline Index3 threadIdx, blockIdx;

inline void __syncthreads() { rtxrt::test::cta::currentCta->barrier.wait(); }
inline rtxrt::test::cta::Warp &thisWarp() {
  return rtxrt::test::cta::currentCta->warps[threadIdx.x / 32];
}
inline void __syncwarp(unsigned = 0xffffffffu) { thisWarp().barrier.wait(); }
inline float __shfl_xor_sync(unsigned, float x, int laneMask) {
  rtxrt::test::cta::Warp &warp = thisWarp();
  unsigned lane = threadIdx.x % 32;
  warp.values[lane] = x;
  warp.barrier.wait();
  float result = warp.values[lane ^ unsigned(laneMask)];
  warp.barrier.wait(); // nobody overwrites values before all have read
  return result;
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d = a b + c for the
/// warp, each lane's fragments as the PTX ISA lays them out: groupID =
/// lane / 4, tig = lane % 4; A (16 x 16, row) register r holds row
/// groupID + 8 (r % 2), columns 2 tig + 8 (r / 2) + {0, 1}; B (16 x 8,
/// col) register r holds column groupID, rows 2 tig + 8 r + {0, 1}; C and
/// D element i is row groupID + 8 (i / 2), column 2 tig + i % 2. The
/// element with the smaller index is in the low 16 bits.
inline void emulatedMma16816(float (&c)[4], const uint32_t (&a)[4],
                             const uint32_t (&b)[2], bool bf16) {
  rtxrt::test::cta::Warp &warp = thisWarp();
  unsigned lane = threadIdx.x % 32;
  std::memcpy(warp.a[lane], a, sizeof(a));
  std::memcpy(warp.b[lane], b, sizeof(b));
  warp.barrier.wait();
  auto value = [&](uint32_t reg, int half) {
    uint16_t bits = uint16_t(half ? reg >> 16 : reg & 0xffffu);
    return bf16 ? __bfloat162float(__nv_bfloat16{bits})
                : __half2float(__half{bits});
  };
  auto aAt = [&](int row, int col) {
    int owner = (row % 8) * 4 + (col % 8) / 2;
    return value(warp.a[owner][row / 8 + 2 * (col / 8)], col % 2);
  };
  auto bAt = [&](int row, int col) {
    int owner = col * 4 + (row % 8) / 2;
    return value(warp.b[owner][row / 8], row % 2);
  };
  for (int i = 0; i < 4; ++i) {
    int row = int(lane / 4) + 8 * (i / 2), col = 2 * int(lane % 4) + i % 2;
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k)
      sum += aAt(row, k) * bAt(k, col);
    c[i] += sum;
  }
  warp.barrier.wait(); // nobody overwrites the fragments before all have read
}

namespace rtxrt::test::cta {

/// Runs kernel<<<ctas, threads, sharedBytes>>>(args...), CTA after CTA,
/// its threads as fibers taking turns at barriers. Throws when a round of
/// turns makes no progress (a barrier some threads never reach).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), int64_t ctas, int threads,
            size_t sharedBytes, Args... args) {
  constexpr size_t kStackBytes = 256 * 1024;
  std::vector<Fiber> pool(threads);
  for (Fiber &fiber : pool)
    fiber.stack.resize(kStackBytes);
  fibers = &pool;
  fiberBody = [&] { kernel(Params(args)...); };
  for (int64_t block = 0; block < ctas; ++block) {
    Cta cta(threads, sharedBytes);
    currentCta = &cta;
    blockIdx.x = unsigned(block);
    for (Fiber &fiber : pool) {
      getcontext(&fiber.context);
      fiber.context.uc_stack.ss_sp = fiber.stack.data();
      fiber.context.uc_stack.ss_size = fiber.stack.size();
      fiber.context.uc_link = &schedulerContext;
      makecontext(&fiber.context, fiberEntry, 0);
      fiber.done = false;
    }
    for (bool running = true; running;) {
      running = false;
      uint64_t before = progress;
      for (int t = 0; t < threads; ++t) {
        if (pool[t].done)
          continue;
        running = true;
        currentFiber = t;
        threadIdx.x = unsigned(t);
        swapcontext(&schedulerContext, &pool[t].context);
      }
      if (running && progress == before)
        throw std::runtime_error("CTA " + std::to_string(block) +
                                 " deadlocks: a barrier some threads never "
                                 "reach");
    }
  }
  fibers = nullptr;
  currentCta = nullptr;
}

} // namespace rtxrt::test::cta

#endif // RTX_TEST_UNIT_RUNTIME_CTAEMULATION_H
