//===- EventTimer.cu - device time of a traced step's ops -----------------===//
//
// The CUDA DeviceEventTimer: one pool of events, created as a step's marks
// first need them and reused by every later step (events are cheap to
// record, not to create). Each mark is a cudaEventRecord on the compute
// stream, which queues it behind the kernels launched before: the device
// stamps it when it reaches that point. resolve() waits for the last mark
// only (cudaEventSynchronize), then reads each mark's time since mark 0
// (cudaEventElapsedTime: about 0.5 us resolution). Nothing here runs in the
// emulation, whose kernels finish before their calls return, so the host's
// clock times them (DeviceRuntime::makeEventTimer is null there).
//
//===----------------------------------------------------------------------===//

#include "Portable.h"

#if defined(__CUDACC__)

#include <cmath>

using namespace rtxrt;

namespace {
class CudaEventTimer final : public DeviceEventTimer {
public:
  ~CudaEventTimer() override {
    for (cudaEvent_t event : events_)
      (void)cudaEventDestroy(event);
  }

  void begin() override {
    used_ = 0;
    mark();
  }

  int64_t mark() override {
    if (used_ == events_.size()) {
      cudaEvent_t event;
      gpu::detail::check(cudaEventCreate(&event),
                         "cudaEventCreate (an op timing event)");
      events_.push_back(event);
    }
    gpu::detail::check(
        cudaEventRecord(events_[used_], gpu::detail::computeStream()),
        "cudaEventRecord (an op timing event)");
    return static_cast<int64_t>(used_++);
  }

  std::vector<int64_t> resolve() override {
    std::vector<int64_t> ns(used_, 0);
    if (used_ == 0)
      return ns;
    // Marks complete in stream order: once the last has, all have.
    gpu::detail::check(cudaEventSynchronize(events_[used_ - 1]),
                       "cudaEventSynchronize (the step's last op event)");
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      gpu::detail::check(cudaEventElapsedTime(&ms, events_[0], events_[i]),
                         "cudaEventElapsedTime (an op's device time)");
      ns[i] = static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
    }
    return ns;
  }

private:
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};
} // namespace

std::unique_ptr<DeviceEventTimer> gpu::detail::makeEventTimer() {
  return std::make_unique<CudaEventTimer>();
}

#endif // defined(__CUDACC__)
