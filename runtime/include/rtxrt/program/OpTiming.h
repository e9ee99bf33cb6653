//===- OpTiming.h - the clock of a traced step's op spans -------*- C++ -*-===//
//
// Each op of a traced step gets a span (StepContext::opBegin/opEnd around
// its kernel call). On the host (CPU programs, and the GPU emulation, whose
// kernels run before their calls return) the host's clock around the call
// times the op. On a GPU a kernel launch returns at once and the kernel runs
// later, so the host's clock would time the launch: there each op is timed
// by a pair of device events recorded on the compute stream around its call
// (rtxrt/device/DeviceEventTimer.h), with no synchronisation inside the
// step; after the step's synchronisation one event wait resolves them, and
// the spans go on the trace's device lane. The events are placed on the
// host's timeline by the step's origin mark, recorded when the device is
// idle (the step before ended with a synchronisation): exact to a launch's
// latency (a few microseconds).
//
// A step replayed from a captured CUDA graph cannot be timed op by op (its
// kernels run as one launch): a step that tracingWantsOpTiming() must run
// uncaptured (docs/gpu.md, "Speed in view").
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_OPTIMING_H
#define RTXRT_PROGRAM_OPTIMING_H

#include "rtxrt/device/DeviceRuntime.h"
#include "rtxrt/observe/Trace.h"

#include <memory>
#include <vector>

namespace rtxrt {

/// Whether step `step` (of this run, 1-based) is traced, and so needs its
/// ops timed one by one: the step loop runs such a step uncaptured (no CUDA
/// graph replay). False without a tracer.
inline bool tracingWantsOpTiming(const Tracer *tracer, int64_t step) {
  return tracer && tracer->tracesStep(step);
}

/// Times the op spans of one StepContext's traced steps; it owns the device
/// event timer of a GPU program.
class OpTiming {
public:
  /// `device`: a GPU program's runtime (null: a host program). Ops are
  /// timed on the device when it has an event timer.
  explicit OpTiming(const DeviceRuntime *device);
  ~OpTiming();
  OpTiming(const OpTiming &) = delete;
  OpTiming &operator=(const OpTiming &) = delete;

  /// Before a traced step's step function: on the device, records the
  /// origin mark and says so in the trace (otherData.op_clock).
  void beginStep(Tracer &tracer);
  /// Around an op's kernel call (the tracer is active).
  void opBegin() { start_ = onDevice_ ? timer_->mark() : Tracer::now(); }
  void opEnd(Tracer &tracer, const OpInfo &op) {
    if (onDevice_)
      timed_.push_back(Timed{&op, start_, timer_->mark()});
    else
      tracer.opSpan(op, start_, Tracer::now());
  }
  /// After the step's synchronisation, while its spans still belong to it
  /// (before Tracer::endStep): writes the device-timed op spans.
  void endStep(Tracer &tracer);

private:
  struct Timed {
    const OpInfo *op;
    int64_t startMark, endMark;
  };
  const DeviceRuntime *device_;
  std::unique_ptr<DeviceEventTimer> timer_;
  /// The current step's ops are timed on the device.
  bool onDevice_ = false;
  /// The host's time of the origin mark.
  int64_t originNs_ = 0;
  /// The running op's start: host nanoseconds, or its start mark.
  int64_t start_ = 0;
  std::vector<Timed> timed_;
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_OPTIMING_H
