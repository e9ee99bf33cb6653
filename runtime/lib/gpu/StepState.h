//===- StepState.h - the GPU runtime's state of the open step ---*- C++ -*-===//
//
// Private to the GPU runtime: what its allocator (Memory.cu) and its
// data-dependent checks (checkFlag) need to know of the step the step
// runner (StepRunner.cu) has open. One object per process, owned by the
// GPU runtime.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_STEPSTATE_H
#define RTXRT_LIB_GPU_STEPSTATE_H

#include "StepArena.h"

#include "rtxrt/core/Tensor.h"

#include <functional>
#include <thread>
#include <vector>

namespace rtxrt::gpu::detail {

/// A device flag (makeFlag) and the host check that throws the op's message
/// when it is set.
struct DeferredCheck {
  Tensor flag;
  std::function<void()> hostCheck;
};

struct StepState {
  /// The arena of the running step loop (off outside one).
  StepArena arena;
  /// Whether checks are deferred to the step's end (a step is open), for
  /// the kernels of the step's thread.
  bool deferChecks = false;
  std::thread::id stepThread;
  /// The checks the open step deferred, in order.
  std::vector<DeferredCheck> checks;
};

/// The process's one StepState.
StepState &stepState();

/// Runs `checks`' host checks for the flags that are set (reads each flag:
/// waits for the device).
void runChecks(const std::vector<DeferredCheck> &checks);

} // namespace rtxrt::gpu::detail

#endif // RTXRT_LIB_GPU_STEPSTATE_H
