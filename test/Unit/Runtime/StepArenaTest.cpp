//===- StepArenaTest.cpp - the step arena's plan and its checks -----------===//
//
// The interval packing (no two buffers alive at once share a byte; never
// more than the sum of the sizes; the peak of live bytes for simple
// sequences), the two-step plan of a step whose buffers outlive it, and the
// arena serving steps: from the plan, with no pool allocation after the
// first step, and a step that differs re-planned or refused.
//
//===----------------------------------------------------------------------===//

#include "StepArena.h"

#include "rtxrt/core/Tensor.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::gpu;

namespace {

ArenaBuffer buffer(int64_t bytes, int64_t start, int64_t end) {
  ArenaBuffer b;
  b.bytes = bytes;
  b.live = {{start, end}};
  return b;
}

int64_t sumOfSizes(const std::vector<ArenaBuffer> &buffers) {
  int64_t sum = 0;
  for (const ArenaBuffer &b : buffers)
    sum += alignedBytes(b.bytes, kArenaAlignment);
  return sum;
}

/// Fails unless no two buffers alive at one time share a byte and every
/// buffer lies inside the layout.
void expectNoOverlap(const std::vector<ArenaBuffer> &buffers,
                     const ArenaLayout &layout) {
  ASSERT_EQ(layout.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t si = alignedBytes(buffers[i].bytes, kArenaAlignment);
    EXPECT_EQ(layout.offsets[i] % kArenaAlignment, 0);
    EXPECT_LE(layout.offsets[i] + si, layout.bytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!livesOverlap(buffers[i], buffers[j]))
        continue;
      int64_t sj = alignedBytes(buffers[j].bytes, kArenaAlignment);
      bool apart = layout.offsets[i] + si <= layout.offsets[j] ||
                   layout.offsets[j] + sj <= layout.offsets[i];
      EXPECT_TRUE(apart) << "buffers " << i << " and " << j
                         << " are alive together and overlap";
    }
  }
}

TEST(StepArenaPacking, RandomLifetimesNeverOverlapAndFitTheSum) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ArenaBuffer> buffers;
    int n = 1 + static_cast<int>(random() % 60);
    for (int i = 0; i < n; ++i) {
      int64_t start = static_cast<int64_t>(random() % 100);
      int64_t end = start + 1 + static_cast<int64_t>(random() % 40);
      buffers.push_back(buffer(1 + random() % 5000, start, end));
    }
    ArenaLayout layout = packBuffers(buffers);
    expectNoOverlap(buffers, layout);
    EXPECT_LE(layout.bytes, sumOfSizes(buffers));
    EXPECT_GE(layout.bytes, peakLiveBytes(buffers));
  }
}

TEST(StepArenaPacking, SimpleSequencesTakeTheirPeak) {
  // One after another: the largest.
  std::vector<ArenaBuffer> chain = {buffer(1000, 0, 2), buffer(3000, 2, 4),
                                    buffer(500, 4, 6)};
  EXPECT_EQ(packBuffers(chain).bytes, alignedBytes(3000, kArenaAlignment));
  EXPECT_EQ(packBuffers(chain).bytes, peakLiveBytes(chain));
  // All at once: the sum.
  std::vector<ArenaBuffer> together = {buffer(1000, 0, 9), buffer(3000, 1, 9),
                                       buffer(500, 2, 9)};
  EXPECT_EQ(packBuffers(together).bytes, sumOfSizes(together));
  // Nested lifetimes (a forward and backward pass: a stack).
  std::vector<ArenaBuffer> nested;
  for (int i = 0; i < 6; ++i)
    nested.push_back(buffer(256 * (i + 1), i, 12 - i));
  EXPECT_EQ(packBuffers(nested).bytes, peakLiveBytes(nested));
  // A temporary between two long-lived buffers reuses a freed one's place.
  std::vector<ArenaBuffer> reuse = {buffer(4096, 0, 3), buffer(1024, 1, 10),
                                    buffer(4096, 4, 6), buffer(2048, 7, 9)};
  ArenaLayout layout = packBuffers(reuse);
  expectNoOverlap(reuse, layout);
  EXPECT_EQ(layout.bytes, peakLiveBytes(reuse));
  EXPECT_EQ(layout.offsets[0], layout.offsets[2]);
}

/// A step of `sizes`: buffer i freed `holds[i]` events later (-1: it
/// survives the step).
StepTrace traceOf(const std::vector<int64_t> &sizes,
                  const std::vector<int64_t> &holds) {
  StepTrace trace;
  int64_t clock = 0;
  std::vector<std::pair<int64_t, size_t>> frees;
  for (size_t i = 0; i < sizes.size(); ++i) {
    trace.bytes.push_back(sizes[i]);
    trace.allocatedAt.push_back(clock++);
    trace.freedAt.push_back(-1);
  }
  // Frees at the given distances after their allocation, in time order.
  for (size_t i = 0; i < sizes.size(); ++i)
    if (holds[i] >= 0)
      trace.freedAt[i] = trace.allocatedAt[i] + holds[i] + 0;
  trace.length = clock;
  for (int64_t f : trace.freedAt)
    trace.length = std::max(trace.length, f + 1);
  return trace;
}

TEST(StepArenaPlan, SurvivorsAlternateAndNeverMeetTheOtherStep) {
  StepTrace trace = traceOf({4096, 1024, 8192, 512}, {-1, 2, 1, -1});
  StepPlan plan = planSteps(trace);
  std::vector<ArenaBuffer> period = periodBuffers(trace);
  ArenaLayout layout;
  layout.bytes = plan.arenaBytes;
  for (int parity = 0; parity < 2; ++parity)
    for (int64_t offset : plan.offsets[parity])
      layout.offsets.push_back(offset);
  expectNoOverlap(period, layout);
  EXPECT_EQ(plan.survivors, 2);
  // A survivor of an even step is alive through the odd one: its two
  // places differ.
  EXPECT_NE(plan.offsets[0][0], plan.offsets[1][0]);
  EXPECT_NE(plan.offsets[0][3], plan.offsets[1][3]);
  EXPECT_LE(plan.arenaBytes, 2 * sumOfSizes(period) / 2);
  EXPECT_GE(plan.arenaBytes, plan.peakBytes);
}

/// A pool that counts what it hands out (host memory).
struct CountingPool {
  int64_t calls = 0;
  StepArena::Pool pool() {
    return [this](size_t bytes) {
      ++calls;
      return std::shared_ptr<unsigned char>(
          new unsigned char[bytes + 1], [](unsigned char *p) { delete[] p; });
    };
  }
};

/// One step of a small program: a survivor (the new state) from two
/// temporaries; the previous step's state is dropped after the step, as
/// the step loop does.
struct FakeLoop {
  StepArena &arena;
  std::shared_ptr<unsigned char> state;
  std::vector<int64_t> sizes = {1000, 3000, 1000};
  void step(int64_t n) {
    arena.beginStep(n);
    auto a = arena.allocate(sizes[0]);
    auto b = arena.allocate(sizes[1]);
    a.reset();
    auto next = arena.allocate(sizes[2]);
    b.reset();
    arena.endStep();
    state = next; // the step before's state goes now
  }
};

TEST(StepArenaServe, LaterStepsComeFromThePlanWithoutThePool) {
  CountingPool pool;
  std::vector<std::string> log;
  StepArena arena;
  arena.reset(true, pool.pool(),
              [&](const std::string &line) { log.push_back(line); });
  FakeLoop loop{arena, nullptr};
  loop.step(1); // a warm-up: from the pool
  EXPECT_EQ(pool.calls, 3);
  EXPECT_FALSE(arena.stats().planned);
  loop.step(2); // recorded: 3 buffers from the pool, then the arena
  EXPECT_EQ(pool.calls, 7);
  ASSERT_TRUE(arena.stats().planned);
  std::set<const unsigned char *> states;
  for (int64_t n = 3; n <= 8; ++n) {
    loop.step(n);
    states.insert(loop.state.get());
  }
  EXPECT_EQ(pool.calls, 7) << "a served step allocated from the pool";
  EXPECT_EQ(arena.stats().servedSteps, 6);
  EXPECT_EQ(arena.stats().servedBuffers, 18);
  EXPECT_EQ(states.size(), 2u) << "the state alternates between two places";
  for (const unsigned char *p : states)
    EXPECT_TRUE(arena.holds(p));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("planned from step 2"), std::string::npos);
}

TEST(StepArenaServe, AStepThatDiffersIsPlannedAgainWithALine) {
  CountingPool pool;
  std::vector<std::string> log;
  StepArena arena;
  arena.reset(true, pool.pool(),
              [&](const std::string &line) { log.push_back(line); });
  FakeLoop loop{arena, nullptr};
  loop.step(1);
  loop.step(2);
  loop.step(3);
  loop.sizes[1] = 5000; // the step changes once
  loop.step(4);
  ASSERT_GE(log.size(), 2u);
  EXPECT_NE(log[1].find("step 4 differs from the plan (allocation #1 is 5000 "
                        "bytes where the plan has 3000)"),
            std::string::npos)
      << log[1];
  loop.step(5); // recorded again
  loop.step(6);
  loop.step(7);
  EXPECT_EQ(arena.stats().plans, 2);
  EXPECT_EQ(arena.stats().servedSteps, 3); // steps 3, 6 and 7
}

TEST(StepArenaServe, AStepThatKeepsChangingIsAnError) {
  CountingPool pool;
  StepArena arena;
  arena.reset(true, pool.pool(), nullptr);
  FakeLoop loop{arena, nullptr};
  std::string message;
  try {
    for (int64_t n = 1; n <= 20; ++n) {
      loop.sizes[0] = 1000 + 512 * n; // a new size at every step
      loop.step(n);
    }
  } catch (const Error &error) {
    message = error.what();
  }
  EXPECT_NE(message.find("allocation #0 is"), std::string::npos) << message;
  EXPECT_NE(message.find("--no-step-arena"), std::string::npos) << message;
  EXPECT_EQ(arena.stats().plans, StepArena::kMaxPlans);
}

TEST(StepArenaServe, ABufferHeldLongerThanPlannedIsNeverHandedOut) {
  CountingPool pool;
  std::vector<std::string> log;
  StepArena arena;
  arena.reset(true, pool.pool(),
              [&](const std::string &line) { log.push_back(line); });
  FakeLoop loop{arena, nullptr};
  loop.step(1);
  loop.step(2);
  loop.step(3);
  // Someone keeps step 4's state beyond the next step: step 6, of the same
  // parity, must not place its state over it.
  loop.step(4);
  std::shared_ptr<unsigned char> kept = loop.state;
  loop.step(5);
  loop.step(6);
  EXPECT_NE(loop.state.get(), kept.get());
  bool said = false;
  for (const std::string &line : log)
    said = said || line.find("meets a buffer still alive") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(StepArenaServe, OffAndOtherThreadsUseThePool) {
  CountingPool pool;
  StepArena arena;
  arena.reset(false, pool.pool(), nullptr);
  FakeLoop loop{arena, nullptr};
  for (int64_t n = 1; n <= 3; ++n)
    loop.step(n);
  EXPECT_EQ(pool.calls, 9);
  EXPECT_FALSE(arena.stats().planned);

  // On: another thread's allocation during a served step (a collective's
  // thread) comes from the pool and leaves the step's sequence alone.
  arena.reset(true, pool.pool(), nullptr);
  loop.step(1);
  loop.step(2);
  int64_t before = pool.calls;
  arena.beginStep(3);
  std::thread([&] { arena.allocate(64); }).join();
  EXPECT_EQ(pool.calls, before + 1);
  arena.endStep(); // no allocation of its own: it differs from the plan
  EXPECT_EQ(arena.stats().servedSteps, 0);
  loop.step(4); // recorded again
  loop.step(5);
  EXPECT_EQ(arena.stats().servedSteps, 1);
}

} // namespace
