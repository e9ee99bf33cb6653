//===- DeviceEventTimer.h - timing device work by events --------*- C++ -*-===//
//
// Kernel launches return before their kernels run, so the host's clock
// around a kernel call measures the launch, not the kernel. A device event
// timer records events on the device's compute stream between the calls and
// reads, after the work is done, when the device reached each: the device's
// own clock (cudaEventRecord / cudaEventElapsedTime). The GPU runtime
// implements it (runtime/lib/gpu/EventTimer.cu); program/OpTiming.h turns
// its marks into the trace's op spans. Never used inside a captured CUDA
// graph: a traced step runs uncaptured (docs/gpu.md, "Speed in view").
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_DEVICE_DEVICEEVENTTIMER_H
#define RTXRT_DEVICE_DEVICEEVENTTIMER_H

#include <cstdint>
#include <vector>

namespace rtxrt {

/// Marks on the compute stream of one step, resolved after it. Its events
/// are created as marks need them and reused by every later step, so a
/// traced step neither creates events (after the first) nor waits for the
/// device until resolve().
class DeviceEventTimer {
public:
  virtual ~DeviceEventTimer() = default;
  /// Starts a step's marks: records mark 0, the origin of the times that
  /// resolve() returns.
  virtual void begin() = 0;
  /// Records a mark on the compute stream after the work queued so far;
  /// returns its index (1, 2, ... after begin()).
  virtual int64_t mark() = 0;
  /// Waits for the last mark (one event synchronisation) and returns, for
  /// every mark since begin(), the nanoseconds from mark 0 to it on the
  /// device's clock.
  virtual std::vector<int64_t> resolve() = 0;
};

} // namespace rtxrt

#endif // RTXRT_DEVICE_DEVICEEVENTTIMER_H
