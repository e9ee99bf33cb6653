//===- OpTiming.cpp - the clock of a traced step's op spans ---------------===//

#include "rtxrt/program/OpTiming.h"

using namespace rtxrt;

OpTiming::OpTiming(const DeviceRuntime *device) : device_(device) {}

OpTiming::~OpTiming() = default;

void OpTiming::beginStep(Tracer &tracer) {
  timed_.clear();
  onDevice_ = false;
  if (!device_ || !device_->makeEventTimer)
    return; // the host's clock times the ops
  if (!timer_) {
    timer_ = device_->makeEventTimer();
    tracer.setOpClock("device: CUDA events on the compute stream");
  }
  // Read before the mark is recorded: the idle device stamps it at or after
  // this moment, so no op span starts before the host queued its kernel.
  originNs_ = Tracer::now();
  timer_->begin();
  onDevice_ = true;
}

void OpTiming::endStep(Tracer &tracer) {
  if (!onDevice_)
    return;
  onDevice_ = false;
  std::vector<int64_t> ns = timer_->resolve();
  for (const Timed &t : timed_)
    tracer.opSpan(*t.op, originNs_ + ns[t.startMark], originNs_ + ns[t.endMark],
                  TraceLane::Device);
  timed_.clear();
}
