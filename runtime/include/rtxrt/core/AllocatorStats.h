//===- AllocatorStats.h - what an allocator counts --------------*- C++ -*-===//
//
// The CPU caching allocator (lib/Tensor.cpp) and the GPU pool
// (lib/gpu/Memory.cu) count the bytes they hand out and keep, so that a run
// can report its peak memory, the share of kept memory that no tensor uses
// (fragmentation, as PyTorch's memory_stats calls reserved minus allocated)
// and failed allocations (the `oom_count` metric; docs/observability.md).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_ALLOCATORSTATS_H
#define RTXRT_ALLOCATORSTATS_H

#include <atomic>
#include <cstdint>

namespace rtxrt {

/// A snapshot of one allocator's counters.
struct AllocatorStats {
  int64_t inUseBytes = 0;      // held by live tensors
  int64_t reservedBytes = 0;   // in use plus kept for reuse
  int64_t peakBytes = 0;       // the most ever in use at once
  int64_t windowPeakBytes = 0; // the most in use since beginPeakWindow()
  int64_t allocations = 0;     // successful allocations
  int64_t failures = 0;        // allocations that failed (out of memory)
  /// Kept memory no tensor uses, as a share of all kept memory, in percent
  /// (0 when nothing is kept).
  double fragmentationPercent() const {
    return reservedBytes > 0 ? 100.0 * double(reservedBytes - inUseBytes) /
                                   double(reservedBytes)
                             : 0.0;
  }
};

namespace detail {
/// The counters an allocator updates (lock-free: allocation is hot).
struct AllocatorCounters {
  std::atomic<int64_t> inUse{0}, cached{0}, peak{0}, windowPeak{0},
      allocations{0}, failures{0};
  static void raise(std::atomic<int64_t> &high, int64_t now) {
    int64_t seen = high.load(std::memory_order_relaxed);
    while (now > seen &&
           !high.compare_exchange_weak(seen, now, std::memory_order_relaxed))
      ;
  }
  void allocated(int64_t bytes) {
    int64_t now = inUse.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    allocations.fetch_add(1, std::memory_order_relaxed);
    raise(peak, now);
    raise(windowPeak, now);
  }
  /// A new window starts with what is in use now (PyTorch's
  /// reset_peak_memory_stats): a step's own peak.
  void beginWindow() {
    windowPeak.store(inUse.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);
  }
  void freed(int64_t bytes) {
    inUse.fetch_sub(bytes, std::memory_order_relaxed);
  }
  /// `reserved`: the allocator's own figure (a GPU pool's), or -1 for in use
  /// plus cached.
  AllocatorStats snapshot(int64_t reserved = -1) const {
    AllocatorStats s;
    s.inUseBytes = inUse.load(std::memory_order_relaxed);
    s.reservedBytes =
        reserved >= 0 ? reserved
                      : s.inUseBytes + cached.load(std::memory_order_relaxed);
    s.peakBytes = peak.load(std::memory_order_relaxed);
    s.windowPeakBytes = windowPeak.load(std::memory_order_relaxed);
    s.allocations = allocations.load(std::memory_order_relaxed);
    s.failures = failures.load(std::memory_order_relaxed);
    return s;
  }
};
} // namespace detail

/// The host allocator of every CPU tensor (lib/Tensor.cpp).
AllocatorStats hostAllocatorStats();
/// Starts the host allocator's peak window (windowPeakBytes).
void beginHostPeakWindow();

} // namespace rtxrt

#endif // RTXRT_ALLOCATORSTATS_H
