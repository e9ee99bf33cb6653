//===- LrSchedule.h - warm-up, then cosine decay of the rate ---*- C++ -*-===//
//
// The learning rate of one optimizer step, written once for every place that
// computes it: the CPU AdamW kernel, the portable GPU bodies and the fast
// multi-tensor kernel (which derive it on the device from the step tensor,
// as they derive the bias corrections, so a captured step does not read the
// step on the host), and the programs' metrics. The semantics are those of
// the `warmup_steps`, `decay_steps` and `min_lr` attributes of
// rtx.adamw_update (RTXGradientOps.td); docs/training.md, "Learning-rate
// schedules", compares them with nanoGPT's and Megatron's.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELS_LRSCHEDULE_H
#define RTXRT_KERNELS_LRSCHEDULE_H

#include "rtxrt/core/detail/HostDevice.h"

#include <cstdint>
#include <math.h>

namespace rtxrt {

/// Linear warm-up over the first `warmupSteps` steps, then a cosine from `lr`
/// down to `minLr` at step `decaySteps`, then `minLr`. The defaults (no
/// warm-up, no decay) keep `lr` constant.
struct LrSchedule {
  double lr = 0.0;
  int64_t warmupSteps = 0; ///< 0: no warm-up
  int64_t decaySteps = 0;  ///< 0: no decay; otherwise > warmupSteps
  double minLr = 0.0;      ///< the rate from step decaySteps on

  /// The rate of step `t` (1-based, the optimizer's step count), with
  /// W = warmupSteps, D = decaySteps, p = (t - W) / (D - W):
  ///   t <= W:      lr * t / W
  ///   W < t <= D:  minLr + (lr - minLr) * (1 + cos(pi * p)) / 2
  ///   t > D:       minLr
  /// Without a schedule it is `lr` itself, bit for bit.
  RTXRT_HOST_DEVICE double at(double t) const {
    if (warmupSteps > 0 && t <= double(warmupSteps))
      return lr * t / double(warmupSteps);
    if (decaySteps <= 0)
      return lr;
    if (t > double(decaySteps))
      return minLr;
    const double pi = 3.14159265358979323846;
    double progress =
        (t - double(warmupSteps)) / double(decaySteps - warmupSteps);
    return minLr + 0.5 * (1.0 + cos(pi * progress)) * (lr - minLr);
  }
};

} // namespace rtxrt

#endif // RTXRT_KERNELS_LRSCHEDULE_H
