//===- StepArena.cpp - one allocation for every buffer of a step ----------===//

#include "StepArena.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace rtxrt;
using namespace rtxrt::gpu;

int64_t gpu::alignedBytes(int64_t bytes, int64_t alignment) {
  int64_t b = std::max<int64_t>(bytes, 1);
  return (b + alignment - 1) / alignment * alignment;
}

bool gpu::livesOverlap(const ArenaBuffer &a, const ArenaBuffer &b) {
  for (const auto &[s1, e1] : a.live)
    for (const auto &[s2, e2] : b.live)
      if (s1 < e2 && s2 < e1)
        return true;
  return false;
}

/// The lowest start of a buffer's lifetime (the order of equal sizes).
static int64_t firstStart(const ArenaBuffer &b) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const auto &interval : b.live)
    first = std::min(first, interval.first);
  return first;
}

ArenaLayout gpu::packBuffers(const std::vector<ArenaBuffer> &buffers,
                             int64_t alignment) {
  size_t n = buffers.size();
  std::vector<int64_t> size(n);
  for (size_t i = 0; i < n; ++i)
    size[i] = alignedBytes(buffers[i].bytes, alignment);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b])
      return size[a] > size[b];
    return firstStart(buffers[a]) < firstStart(buffers[b]);
  });
  ArenaLayout layout;
  layout.offsets.assign(n, 0);
  std::vector<size_t> placed;
  for (size_t b : order) {
    // The placed buffers alive with this one, by offset.
    std::vector<size_t> conflicts;
    for (size_t p : placed)
      if (livesOverlap(buffers[b], buffers[p]))
        conflicts.push_back(p);
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t x, size_t y) {
      return layout.offsets[x] < layout.offsets[y];
    });
    int64_t bestOffset = -1, bestGap = std::numeric_limits<int64_t>::max();
    int64_t top = 0; // the end of the conflicts so far
    for (size_t c : conflicts) {
      int64_t gap = layout.offsets[c] - top;
      if (gap >= size[b] && gap < bestGap) {
        bestGap = gap;
        bestOffset = top;
      }
      top = std::max(top, layout.offsets[c] + size[c]);
    }
    layout.offsets[b] = bestOffset >= 0 ? bestOffset : top;
    layout.bytes = std::max(layout.bytes, layout.offsets[b] + size[b]);
    placed.push_back(b);
  }
  return layout;
}

int64_t gpu::peakLiveBytes(const std::vector<ArenaBuffer> &buffers,
                           int64_t alignment) {
  // (time, change): a buffer's end sorts before a start at the same time.
  std::vector<std::pair<int64_t, int64_t>> events;
  for (const ArenaBuffer &b : buffers)
    for (const auto &[start, end] : b.live) {
      int64_t bytes = alignedBytes(b.bytes, alignment);
      events.push_back({start, bytes});
      events.push_back({end, -bytes});
    }
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (const auto &event : events) {
    live += event.second;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<ArenaBuffer> gpu::periodBuffers(const StepTrace &trace) {
  size_t n = trace.bytes.size();
  int64_t length = trace.length;
  std::vector<ArenaBuffer> buffers(2 * n);
  for (size_t i = 0; i < n; ++i) {
    int64_t at = trace.allocatedAt[i], freed = trace.freedAt[i];
    ArenaBuffer &even = buffers[i], &odd = buffers[n + i];
    even.bytes = odd.bytes = trace.bytes[i];
    if (freed >= 0) {
      even.live = {{at, freed}};
      odd.live = {{length + at, length + freed}};
    } else {
      // Alive until the next step ends; the odd step's survivors through
      // the next even step, at the start of the period.
      even.live = {{at, 2 * length}};
      odd.live = {{length + at, 2 * length}, {0, length}};
    }
  }
  return buffers;
}

StepPlan gpu::planSteps(const StepTrace &trace, int64_t alignment) {
  std::vector<ArenaBuffer> buffers = periodBuffers(trace);
  ArenaLayout layout = packBuffers(buffers, alignment);
  size_t n = trace.bytes.size();
  StepPlan plan;
  plan.bytes = trace.bytes;
  plan.offsets[0].assign(layout.offsets.begin(), layout.offsets.begin() + n);
  plan.offsets[1].assign(layout.offsets.begin() + n, layout.offsets.end());
  plan.arenaBytes = layout.bytes;
  plan.peakBytes = peakLiveBytes(buffers, alignment);
  plan.survivors = std::count(trace.freedAt.begin(), trace.freedAt.end(), -1);
  return plan;
}

// --- the arena of a step loop ------------------------------------------------

/// The recorded step: its trace, written by the allocations of the step's
/// thread and by frees from any thread.
struct StepArena::Recording {
  std::mutex mutex;
  bool open = true;
  int64_t clock = 0;
  StepTrace trace;
};

/// A plan's one allocation and the buffers alive in it (offset to end).
struct StepArena::Storage {
  std::shared_ptr<unsigned char> memory;
  std::mutex mutex;
  std::map<int64_t, int64_t> live;
};

void StepArena::reset(bool enabled, Pool pool, Log log) {
  mode_ = enabled ? Mode::WarmUp : Mode::Off;
  pool_ = std::move(pool);
  log_ = std::move(log);
  inStep_ = false;
  recording_.reset();
  storage_.reset(); // its buffers still alive keep its memory
  plan_ = StepPlan();
  stats_ = StepArenaStats();
}

void StepArena::beginStep(int64_t step) {
  inStep_ = true;
  stepThread_ = std::this_thread::get_id();
  step_ = step;
  position_ = 0;
  diverged_ = false;
  divergence_.clear();
  if (mode_ == Mode::Record)
    recording_ = std::make_shared<Recording>();
  if (mode_ == Mode::Serve)
    parity_ = 1 - parity_;
}

std::shared_ptr<unsigned char> StepArena::allocate(size_t bytes) {
  if (mode_ == Mode::Off || mode_ == Mode::WarmUp || !onStepThread())
    return pool_(bytes);
  if (mode_ == Mode::Record)
    return record(bytes);
  return serve(bytes);
}

std::shared_ptr<unsigned char> StepArena::record(size_t bytes) {
  std::shared_ptr<unsigned char> block = pool_(bytes);
  std::shared_ptr<Recording> recording = recording_;
  size_t position;
  {
    std::lock_guard<std::mutex> lock(recording->mutex);
    StepTrace &trace = recording->trace;
    position = trace.bytes.size();
    trace.bytes.push_back(static_cast<int64_t>(bytes));
    trace.allocatedAt.push_back(recording->clock++);
    trace.freedAt.push_back(-1);
  }
  // The pool's buffer lives as long as this view of it; its free is an
  // event of the recorded step while the step is open.
  return std::shared_ptr<unsigned char>(
      block.get(), [block, recording, position](unsigned char *) mutable {
        {
          std::lock_guard<std::mutex> lock(recording->mutex);
          if (recording->open)
            recording->trace.freedAt[position] = recording->clock++;
        }
        block.reset();
      });
}

std::shared_ptr<unsigned char> StepArena::serve(size_t bytes) {
  int64_t position = position_++;
  if (diverged_)
    return pool_(bytes);
  int64_t size = static_cast<int64_t>(bytes);
  if (position >= static_cast<int64_t>(plan_.bytes.size())) {
    diverge("allocation #" + std::to_string(position) + " (" +
            std::to_string(size) + " bytes) is beyond the " +
            std::to_string(plan_.bytes.size()) + " the plan holds");
    return pool_(bytes);
  }
  if (plan_.bytes[position] != size) {
    diverge("allocation #" + std::to_string(position) + " is " +
            std::to_string(size) + " bytes where the plan has " +
            std::to_string(plan_.bytes[position]));
    return pool_(bytes);
  }
  int64_t offset = plan_.offsets[parity_][position];
  int64_t end = offset + alignedBytes(size, kArenaAlignment);
  std::shared_ptr<Storage> storage = storage_;
  std::string conflict;
  {
    std::lock_guard<std::mutex> lock(storage->mutex);
    // The live buffers never overlap, so the one starting last before
    // `end` is the only one that can reach into [offset, end).
    auto next = storage->live.lower_bound(end);
    if (next != storage->live.begin() && std::prev(next)->second > offset)
      conflict = "allocation #" + std::to_string(position) + " (" +
                 std::to_string(size) + " bytes at offset " +
                 std::to_string(offset) +
                 ") meets a buffer still alive at offset " +
                 std::to_string(std::prev(next)->first) +
                 ": a buffer lives longer than in the planned step";
    else
      storage->live.emplace(offset, end);
  }
  if (!conflict.empty()) {
    diverge(conflict);
    return pool_(bytes);
  }
  ++stats_.servedBuffers;
  return std::shared_ptr<unsigned char>(
      storage->memory.get() + offset, [storage, offset](unsigned char *) {
        std::lock_guard<std::mutex> lock(storage->mutex);
        storage->live.erase(offset);
      });
}

void StepArena::diverge(const std::string &why) {
  diverged_ = true;
  divergence_ = why;
}

void StepArena::endStep() {
  if (!inStep_)
    return;
  inStep_ = false;
  if (mode_ == Mode::WarmUp) {
    mode_ = Mode::Record;
    return;
  }
  if (mode_ == Mode::Record) {
    {
      std::lock_guard<std::mutex> lock(recording_->mutex);
      recording_->open = false;
      recording_->trace.length = recording_->clock;
    }
    plan();
    return;
  }
  if (mode_ != Mode::Serve)
    return;
  if (!diverged_ && position_ < static_cast<int64_t>(plan_.bytes.size()))
    diverge("the step made " + std::to_string(position_) +
            " allocations where the plan has " +
            std::to_string(plan_.bytes.size()));
  if (!diverged_) {
    ++stats_.servedSteps;
    ++stepsOnPlan_;
    return;
  }
  if (stats_.plans >= kMaxPlans)
    throw Error("step arena: step " + std::to_string(step_) +
                " differs from its plan after " + std::to_string(stats_.plans) +
                " plans (" + divergence_ +
                "): the step's allocations change from step to step; run "
                "with --no-step-arena");
  if (log_)
    log_("step arena: step " + std::to_string(step_) +
         " differs from the plan (" + divergence_ +
         "); its other allocations came from the pool; planning again from "
         "step " +
         std::to_string(step_ + 1));
  mode_ = Mode::Record;
}

void StepArena::plan() {
  StepTrace trace;
  {
    std::lock_guard<std::mutex> lock(recording_->mutex);
    trace = recording_->trace;
  }
  recording_.reset();
  plan_ = planSteps(trace);
  // One allocation for the plan, made between steps; the buffers of the
  // plan before, still alive, keep theirs.
  auto storage = std::make_shared<Storage>();
  try {
    storage->memory = pool_(static_cast<size_t>(plan_.arenaBytes));
  } catch (const std::exception &error) {
    throw Error("step arena: its " + std::to_string(plan_.arenaBytes) +
                " bytes for " + std::to_string(plan_.bytes.size()) +
                " buffers a step could not be allocated (" + error.what() +
                "); --no-step-arena takes each buffer from the pool");
  }
  storage_ = storage;
  mode_ = Mode::Serve;
  parity_ = 1; // the next step is even
  stepsOnPlan_ = 0;
  ++stats_.plans;
  stats_.planned = true;
  stats_.arenaBytes = plan_.arenaBytes;
  stats_.peakBytes = plan_.peakBytes;
  stats_.buffersPerStep = static_cast<int64_t>(plan_.bytes.size());
  stats_.survivors = plan_.survivors;
  if (log_)
    log_("step arena: planned from step " + std::to_string(step_) + ": " +
         std::to_string(plan_.bytes.size()) + " buffers a step (" +
         std::to_string(plan_.survivors) + " outlive it), " +
         std::to_string(plan_.arenaBytes) + " bytes for two steps (" +
         std::to_string(plan_.peakBytes) + " live at most)");
}

StepArenaStats StepArena::stats() const { return stats_; }

bool StepArena::holds(const void *p) const {
  if (!storage_ || !storage_->memory)
    return false;
  auto *byte = static_cast<const unsigned char *>(p);
  const unsigned char *base = storage_->memory.get();
  return byte >= base && byte < base + plan_.arenaBytes;
}
