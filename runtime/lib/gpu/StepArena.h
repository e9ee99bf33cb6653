//===- StepArena.h - one allocation for every buffer of a step --*- C++ -*-===//
//
// Private to the GPU runtime. A training step allocates the same buffers in
// the same order every step (the kernels' results, temporaries and flags,
// all through gpu::empty/zeros). The step arena watches one step's
// allocations and frees, plans an offset for each from the lifetimes it
// saw (offline interval packing, best fit by size), takes one allocation
// for all of them, and from then on hands out each allocation of a step at
// its planned offset: inside a step there is no cudaMalloc, cudaMallocAsync
// or free, which is also what lets the step be captured as a CUDA graph
// (StepRunner.cu; docs/gpu.md "One arena, one graph per step").
//
// Buffers that outlive their step (the new parameters and optimizer state,
// the loss, a deferred check's flag) are alive during the whole next step,
// until the step loop passes them on and drops the step before. So the plan
// covers two steps, even and odd, with their own offsets for those
// survivors (ping-pong), and the buffers of one step are placed around the
// survivors of the other.
//
// Nothing is trusted blindly: every step served from the plan is checked as
// it goes (the same size at the same position, and no buffer handed out
// over one still alive). A step that differs is finished from the pool and
// the next one is planned again, with a line in the log; a step that keeps
// changing is an Error that names the allocation.
//
// The planning is plain C++ with no CUDA: the host emulation runs it on
// host memory, so CI tests it (test/Unit/Runtime/StepArenaTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_STEPARENA_H
#define RTXRT_LIB_GPU_STEPARENA_H

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace rtxrt::gpu {

/// Every buffer's offset and size are multiples of this (what cudaMalloc
/// guarantees, and more than vector loads and cuBLAS need).
constexpr int64_t kArenaAlignment = 256;

/// One buffer to place: its size and the half-open intervals of event time
/// [start, end) during which it is alive.
struct ArenaBuffer {
  int64_t bytes = 0;
  std::vector<std::pair<int64_t, int64_t>> live;
};

/// Where each buffer goes in one allocation of `bytes`.
struct ArenaLayout {
  std::vector<int64_t> offsets;
  int64_t bytes = 0;
};

/// `bytes` rounded up to a multiple of `alignment` (at least one).
int64_t alignedBytes(int64_t bytes, int64_t alignment);

/// Whether two buffers are alive at one time.
bool livesOverlap(const ArenaBuffer &a, const ArenaBuffer &b);

/// Offline interval packing, best fit by size: the largest buffer first;
/// each goes into the smallest gap, between the buffers already placed
/// that are alive with it, that holds it (the lowest such gap), else above
/// them all. Two buffers alive at one time never share a byte, and the
/// arena is never larger than the sum of the (aligned) sizes.
ArenaLayout packBuffers(const std::vector<ArenaBuffer> &buffers,
                        int64_t alignment = kArenaAlignment);

/// The most (aligned) bytes alive at one time: no layout is smaller.
int64_t peakLiveBytes(const std::vector<ArenaBuffer> &buffers,
                      int64_t alignment = kArenaAlignment);

/// One step's allocations, in order, as the arena saw them; times count
/// the step's allocations and frees (each event one tick).
struct StepTrace {
  std::vector<int64_t> bytes;
  std::vector<int64_t> allocatedAt;
  /// -1: still alive when the step ended (a survivor).
  std::vector<int64_t> freedAt;
  int64_t length = 0; ///< events in the step
};

/// The offsets of a step's allocations, by position, for even and odd
/// steps (survivors alternate; see the file comment).
struct StepPlan {
  std::array<std::vector<int64_t>, 2> offsets;
  std::vector<int64_t> bytes; ///< each position's size, as allocated
  int64_t arenaBytes = 0;
  int64_t survivors = 0;
  /// The most bytes alive at once over the two steps (the arena's bound).
  int64_t peakBytes = 0;
};

/// The buffers of two consecutive steps of `trace` on a period of two
/// steps: a buffer freed in its step lives as observed; a survivor lives
/// to the end of the next step (even's survivors through the odd step,
/// odd's through the next even one).
std::vector<ArenaBuffer> periodBuffers(const StepTrace &trace);
StepPlan planSteps(const StepTrace &trace, int64_t alignment = kArenaAlignment);

/// What the arena did (the step runner's log, the tests).
struct StepArenaStats {
  bool planned = false;
  int64_t arenaBytes = 0;     ///< the current plan's allocation
  int64_t peakBytes = 0;      ///< its two steps' peak of live bytes
  int64_t buffersPerStep = 0; ///< allocations a step makes
  int64_t survivors = 0;      ///< of them, those that outlive their step
  int64_t servedSteps = 0;    ///< steps served wholly from a plan
  int64_t servedBuffers = 0;  ///< allocations served from a plan
  int64_t plans = 0;          ///< plans made (1 + re-plans)
};

/// The arena of the steps of one step loop (StepRunner). Allocations made
/// inside a step, on the thread that began it, come from the pool in the
/// first step (a warm-up: one-time allocations such as constants uploaded
/// on first use happen there), are recorded in the second and served from
/// the plan in the later ones; those of other threads and those between
/// steps go to the pool as before.
class StepArena {
public:
  /// A buffer from the device allocator (cudaMallocAsync, or host memory in
  /// the emulation).
  using Pool = std::function<std::shared_ptr<unsigned char>(size_t bytes)>;
  using Log = std::function<void(const std::string &line)>;

  /// Forgets any plan; `enabled` false: every allocation goes to `pool`.
  void reset(bool enabled, Pool pool, Log log);
  bool enabled() const { return mode_ != Mode::Off; }

  /// A step begins on the calling thread, the `step`th of its loop.
  void beginStep(int64_t step);
  /// The step's allocations are done. Throws an Error when it made fewer
  /// allocations than the plan (and steps keep changing); plans after the
  /// recorded step.
  void endStep();
  bool inStep() const { return inStep_; }
  /// Whether the step now open is served from a plan, and its parity.
  bool serving() const { return inStep_ && mode_ == Mode::Serve; }
  int parity() const { return parity_; }
  /// Steps served wholly by the current plan (0 when the next step is
  /// recorded): a step may be captured once both parities have been.
  int64_t stepsOnPlan() const {
    return mode_ == Mode::Serve ? stepsOnPlan_ : 0;
  }
  /// Whether the step now open has followed its plan so far.
  bool onPlan() const { return serving() && !diverged_; }

  /// The buffer for `bytes`: from the plan when the calling thread is
  /// inside a served step, from the pool otherwise (and recorded, in the
  /// recorded step).
  std::shared_ptr<unsigned char> allocate(size_t bytes);

  StepArenaStats stats() const;
  /// Whether `p` points into the current plan's allocation.
  bool holds(const void *p) const;
  /// Keeps the current plan's allocation alive (a captured graph writes
  /// into it); null without a plan.
  std::shared_ptr<void> memoryOwner() const { return storage_; }

  /// After this many plans a step that still differs is an Error.
  static constexpr int64_t kMaxPlans = 4;

private:
  /// WarmUp: the loop's first step, from the pool and not recorded (it
  /// makes the one-time allocations: constants uploaded once, lazily
  /// created state).
  enum class Mode { Off, WarmUp, Record, Serve };
  struct Recording;
  struct Storage;

  std::shared_ptr<unsigned char> record(size_t bytes);
  std::shared_ptr<unsigned char> serve(size_t bytes);
  /// The step differs from the plan at `position`: the rest of it comes
  /// from the pool and the next step is recorded again.
  void diverge(const std::string &why);
  void plan();
  bool onStepThread() const {
    return inStep_ && std::this_thread::get_id() == stepThread_;
  }

  Mode mode_ = Mode::Off;
  Pool pool_;
  Log log_;
  bool inStep_ = false;
  std::thread::id stepThread_;
  int64_t step_ = 0;
  int parity_ = 0;
  int64_t position_ = 0; ///< allocations of the open step so far
  int64_t stepsOnPlan_ = 0;
  bool diverged_ = false;
  std::string divergence_;
  std::shared_ptr<Recording> recording_;
  std::shared_ptr<Storage> storage_;
  StepPlan plan_;
  StepArenaStats stats_;
};

} // namespace rtxrt::gpu

#endif // RTXRT_LIB_GPU_STEPARENA_H
