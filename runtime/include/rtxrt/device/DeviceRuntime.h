//===- DeviceRuntime.h - the device half of a GPU program -------*- C++ -*-===//
//
// What a GPU build of the runtime (runtime/lib/gpu) gives the host side of a
// program: moving tensors, synchronising, its allocator and its process
// groups. Host programs have none.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_DEVICE_DEVICERUNTIME_H
#define RTXRT_DEVICE_DEVICERUNTIME_H

#include "rtxrt/comm/Communicator.h"
#include "rtxrt/core/AllocatorStats.h"
#include "rtxrt/device/DeviceEventTimer.h"
#include "rtxrt/device/StepRunner.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {

/// The device half of an emitted GPU program (rtxrt::gpu::deviceRuntime()).
/// Host programs have none.
struct DeviceRuntime {
  const char *name = "";
  std::function<std::string(int64_t localRank)> selectDevice;
  std::function<Tensor(const Tensor &)> toDevice, toHost;
  /// Waits until the device has finished all queued work (step timing:
  /// kernels run asynchronously, after the step function has returned).
  std::function<void()> synchronize;
  /// Allows TF32 tensor cores for f32 GEMMs (the program's --tf32).
  std::function<void(bool)> setTf32;
  /// Runs the portable reference kernels instead of the fast ones (the
  /// program's --portable-kernels).
  std::function<void()> usePortableKernels;
  /// The device allocator's counters (peak bytes, fragmentation, failed
  /// allocations: the run's metrics).
  std::function<AllocatorStats()> allocatorStats;
  /// Starts its peak window (a step's peak, step_peak_bytes).
  std::function<void()> beginPeakWindow;
  /// Piece `index` of n along `dim`, on the device (rtx.mesh_slice).
  std::function<Tensor(const Tensor &, int64_t dim, int64_t n, int64_t index)>
      sliceGroup;
  /// What runs the steps of a step loop: the step arena and, on CUDA, the
  /// step's graph (rtxrt/device/StepRunner.h).
  std::function<std::unique_ptr<StepRunner>(const StepRunnerOptions &)>
      makeStepRunner;
  /// Device process groups (NCCL); null when this build has none, and then
  /// Gloo's host process groups serve through host memory.
  std::function<std::unique_ptr<Communicator>(
      int64_t rank, int64_t size, const Rendezvous &rendezvous,
      const std::vector<std::vector<int64_t>> &groups, double timeoutSeconds)>
      makeCommunicator;
  /// A timer of device work by events on the compute stream (a traced
  /// step's ops: program/OpTiming.h); null where the host's clock already
  /// times the work (the emulation runs each kernel before its call returns).
  std::function<std::unique_ptr<DeviceEventTimer>()> makeEventTimer;
};

} // namespace rtxrt

#endif // RTXRT_DEVICE_DEVICERUNTIME_H
