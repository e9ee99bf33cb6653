//===- PlanCostTest.cpp - the auto-partitioner's cost model pieces --------===//
//
// The pieces of the planner that can be checked without a model: stage
// splitting against brute force, the closed-form pipeline times against
// the simulator, the alpha-beta ring times, and the hardware profiles
// (every built-in parses; errors name the field).
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/HardwareProfile.h"
#include "rtx/Analysis/PlanCost.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <functional>
#include <random>

using namespace mlir::rtx;
using namespace mlir::rtx::planner;

namespace {

double bottleneck(const std::vector<double> &costs,
                  const std::vector<int64_t> &starts) {
  double worst = 0;
  for (size_t s = 0; s < starts.size(); ++s) {
    int64_t end = s + 1 < starts.size() ? starts[s + 1] : costs.size();
    double sum = 0;
    for (int64_t u = starts[s]; u < end; ++u)
      sum += costs[u];
    worst = std::max(worst, sum);
  }
  return worst;
}

/// The best bottleneck over every placement of the cuts.
double bruteForce(const std::vector<double> &costs, int64_t stages) {
  int64_t n = costs.size();
  double best = 1e300;
  std::vector<int64_t> starts(stages);
  std::function<void(int64_t, int64_t)> place = [&](int64_t s, int64_t from) {
    if (s == stages) {
      best = std::min(best, bottleneck(costs, starts));
      return;
    }
    for (int64_t u = from; u <= n - (stages - s); ++u) {
      starts[s] = u;
      place(s + 1, u + 1);
    }
  };
  starts[0] = 0;
  place(1, 1);
  return best;
}

TEST(PlanCost, StageSplitIsOptimal) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.1, 10.0);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t n = 2 + trial % 9;
    std::vector<double> costs(n);
    for (double &c : costs)
      c = cost(rng);
    for (int64_t stages = 1; stages <= n; ++stages) {
      std::vector<int64_t> starts = splitStages(costs, stages);
      ASSERT_EQ(int64_t(starts.size()), stages);
      ASSERT_EQ(starts[0], 0);
      for (size_t s = 1; s < starts.size(); ++s)
        ASSERT_LT(starts[s - 1], starts[s]) << "stages must be non-empty";
      EXPECT_NEAR(bottleneck(costs, starts), bruteForce(costs, stages),
                  1e-9 * bruteForce(costs, stages));
    }
  }
}

/// The closed forms used for schedules too long to simulate equal the
/// simulator on uniform stages.
TEST(PlanCost, ClosedFormMatchesTheSimulator) {
  using pipeline::ScheduleKind;
  struct Case {
    ScheduleKind kind;
    int64_t p, m, v;
  };
  for (Case c : {Case{ScheduleKind::GPipe, 4, 8, 1},
                 Case{ScheduleKind::OneFOneB, 4, 8, 1},
                 Case{ScheduleKind::OneFOneB, 8, 32, 1},
                 Case{ScheduleKind::Interleaved, 4, 8, 2},
                 Case{ScheduleKind::Interleaved, 4, 16, 4},
                 Case{ScheduleKind::ZeroBubbleH1, 4, 8, 1},
                 Case{ScheduleKind::ZeroBubbleH1, 8, 24, 1}}) {
    int64_t stages = c.p * c.v;
    double f = 1.0 / double(c.v), b = 2.0 / double(c.v);
    std::vector<double> forward(stages, f), backward(stages, b);
    pipeline::GenerateResult generated =
        pipeline::generateSchedule(c.kind, c.p, c.m, c.v);
    ASSERT_TRUE(generated.schedule) << generated.error;
    pipeline::ActionCosts costs;
    costs.backward = 1;
    costs.inputGrad = 0.5;
    costs.weightGrad = 0.5;
    for (int64_t s = 0; s < stages; ++s)
      costs.perStage[s] = {f, b};
    pipeline::SimulationResult sim =
        pipeline::simulate(*generated.schedule, costs);
    ASSERT_TRUE(sim.errors.empty());
    double closed =
        pipelineTimeClosedForm(c.kind, c.p, c.m, c.v, forward, backward, 0);
    EXPECT_NEAR(closed, sim.makespan, 0.05 * sim.makespan)
        << pipeline::scheduleKindName(c.kind) << " p=" << c.p << " m=" << c.m
        << " v=" << c.v;
  }
}

TEST(PlanCost, BuiltinProfilesParse) {
  std::vector<std::string> names = builtinProfileNames();
  ASSERT_GE(names.size(), 5u);
  for (const std::string &name : names) {
    llvm::Expected<HardwareProfile> profile = loadHardwareProfile(name);
    ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
    EXPECT_GT(profile->memoryBytes, 0) << name;
    EXPECT_GT(profile->peak("f32"), 0) << name;
    EXPECT_FALSE(profile->sources.empty()) << name;
    EXPECT_EQ(int64_t(profile->intraNode.size()), profile->devicesPerNode);
  }
  llvm::Expected<HardwareProfile> a100 = loadHardwareProfile("dgx-a100");
  ASSERT_TRUE(bool(a100));
  // Within a node NVSwitch, across nodes InfiniBand.
  EXPECT_EQ(a100->link(0, 7).name, "nvswitch");
  EXPECT_EQ(a100->link(7, 8).name, "infiniband");
  EXPECT_DOUBLE_EQ(a100->peak("bf16"), 312e12);
  // A type the profile lacks falls back to f32's peak.
  EXPECT_DOUBLE_EQ(a100->peak("f64"), 19.5e12);
}

TEST(PlanCost, MalformedProfilesNameTheField) {
  auto error = [](const char *json) {
    llvm::Expected<HardwareProfile> p = parseHardwareProfile(json, "test");
    EXPECT_FALSE(bool(p));
    return p ? std::string() : llvm::toString(p.takeError());
  };
  EXPECT_NE(error("[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error("{\"schema\": \"other/2\"}").find("schema: expected"),
            std::string::npos);
  std::string noDevice = error(
      "{\"schema\": \"rtx-hardware-profile/1\", \"name\": \"x\", "
      "\"sources\": [\"s\"]}");
  EXPECT_NE(noDevice.find("device: missing"), std::string::npos) << noDevice;
  std::string badPeak = error(
      "{\"schema\": \"rtx-hardware-profile/1\", \"name\": \"x\", "
      "\"sources\": [\"s\"], \"device\": {\"kind\": \"gpu\", \"model\": "
      "\"m\", \"memory_bytes\": 1, \"memory_bandwidth\": 1, "
      "\"matmul_efficiency\": 0.5, \"op_overhead_s\": 0, \"peak_flops\": "
      "{\"f32\": -1}}}");
  EXPECT_NE(badPeak.find("device.peak_flops.f32: expected a positive number"),
            std::string::npos)
      << badPeak;
}

/// A calibrated GEMM shape is preferred to peak x efficiency, and the
/// nearest measured shape is used.
TEST(PlanCost, CalibratedMatmulRates) {
  llvm::Expected<HardwareProfile> profile = loadHardwareProfile("cpu-host");
  ASSERT_TRUE(bool(profile));
  EXPECT_DOUBLE_EQ(profile->matmulRate(512, 512, 512, "f32"),
                   96e9 * 0.6);
  profile->matmul = {{64, 64, 64, "f32", 1e9}, {1024, 1024, 1024, "f32", 5e10}};
  EXPECT_DOUBLE_EQ(profile->matmulRate(80, 60, 70, "f32"), 1e9);
  EXPECT_DOUBLE_EQ(profile->matmulRate(2048, 768, 768, "f32"), 5e10);
}

} // namespace
