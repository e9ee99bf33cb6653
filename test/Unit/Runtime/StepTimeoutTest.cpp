//===- StepTimeoutTest.cpp - collective timeouts sized to the step time ---===//
//
// --timeout auto (program/StepTimeout.h): the rendezvous timeout through the
// warm-up, then 10x the p99 step time clamped to [2 s, 60 s]; a fixed
// --timeout from the start; relax() for the work after the steps.
//
//===----------------------------------------------------------------------===//

#include "StepTimeout.h"

#include <gtest/gtest.h>

#include <vector>

using namespace rtxrt::program;

TEST(StepTimeoutTest, FixedTimeoutAppliesFromTheFirstStep) {
  std::vector<double> applied;
  StepTimeout timeout(/*automatic=*/false, 5, 60);
  EXPECT_EQ(timeout.rendezvous(), 60);
  EXPECT_EQ(timeout.shortest(), 5);
  timeout.start([&](double s) { applied.push_back(s); });
  EXPECT_EQ(applied, std::vector<double>{5});
  EXPECT_EQ(timeout.observe(100), 5); // a slow step changes nothing
  timeout.relax();
  EXPECT_EQ(applied, (std::vector<double>{5, 60}));
}

TEST(StepTimeoutTest, AFixedTimeoutLongerThanTheRendezvousRaisesIt) {
  StepTimeout timeout(false, 600, 60);
  EXPECT_EQ(timeout.rendezvous(), 600);
}

TEST(StepTimeoutTest, AutoWaitsForTheWarmupThenSizesToTheP99) {
  std::vector<double> applied;
  StepTimeout timeout(/*automatic=*/true, 60, 30);
  EXPECT_EQ(timeout.shortest(), StepTimeout::kFloorSeconds);
  timeout.start([&](double s) { applied.push_back(s); });
  EXPECT_EQ(timeout.observe(0.5), 30); // warm-up: the rendezvous timeout
  EXPECT_EQ(timeout.observe(0.4), 30);
  EXPECT_DOUBLE_EQ(timeout.observe(0.3), 5.0); // 10 x the largest of 3
  timeout.relax();
  EXPECT_EQ(timeout.current(), 30);
  EXPECT_EQ(applied.front(), 30);
}

TEST(StepTimeoutTest, AutoIsClampedAndIgnoresTheTopPercent) {
  std::deque<double> fast(200, 0.01);
  EXPECT_EQ(StepTimeout::sized(fast), StepTimeout::kFloorSeconds);
  std::deque<double> slow(10, 30.0);
  EXPECT_EQ(StepTimeout::sized(slow), StepTimeout::kCeilingSeconds);
  // 100 steps, one of them an outlier (a checkpoint's stall): the p99 is
  // the 99th of 100, so the outlier does not set the timeout.
  std::deque<double> steps(99, 0.5);
  steps.push_back(20);
  EXPECT_DOUBLE_EQ(StepTimeout::sized(steps), 5.0);
}
