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
#include <array>
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
  std::string badVector = error(
      "{\"schema\": \"rtx-hardware-profile/1\", \"name\": \"x\", "
      "\"sources\": [\"s\"], \"device\": {\"kind\": \"cpu\", \"model\": "
      "\"m\", \"memory_bytes\": 1, \"memory_bandwidth\": 1, "
      "\"matmul_efficiency\": 0.5, \"op_overhead_s\": 0, "
      "\"vector_flops_per_s\": 0, \"peak_flops\": {\"f32\": 1}}}");
  EXPECT_NE(
      badVector.find("device.vector_flops_per_s: expected a positive number"),
      std::string::npos)
      << badVector;
}

/// A calibrated GEMM shape is preferred to peak x efficiency, and the
/// nearest measured shape is used.
TEST(PlanCost, CalibratedMatmulRates) {
  llvm::Expected<HardwareProfile> profile = loadHardwareProfile("cpu-host");
  ASSERT_TRUE(bool(profile));
  EXPECT_DOUBLE_EQ(profile->matmulRate(512, 512, 512, "f32"),
                   96e9 * 0.6);
  profile->matmul = {{64, 64, 64, false, "f32", 1e9},
                     {1024, 1024, 1024, false, "f32", 5e10}};
  EXPECT_DOUBLE_EQ(profile->matmulRate(80, 60, 70, "f32"), 1e9);
  EXPECT_DOUBLE_EQ(profile->matmulRate(2048, 768, 768, "f32"), 5e10);
  // Without a sample of the transposed layout, the nearest of any layout;
  // with one, the nearest of that layout, however far.
  EXPECT_DOUBLE_EQ(profile->matmulRate(2048, 768, 768, "f32", true), 5e10);
  profile->matmul.push_back({64, 64, 64, true, "f32", 2e9});
  EXPECT_DOUBLE_EQ(profile->matmulRate(2048, 768, 768, "f32", true), 2e9);
  EXPECT_DOUBLE_EQ(profile->matmulRate(2048, 768, 768, "f32", false), 5e10);
}

/// Two units of one non-GEMM op each (`flops` forward and backward, no
/// bytes) and `paramBytes` of parameters each, batch 1.
/// Two units of `paramBytes` each, in rtx-shard-state's flat buffers
/// `buffers[i]` (by default one per unit).
ModelCosts twoUnits(double paramBytes, double flops = 1e9,
                    std::array<const char *, 2> buffers = {"h.0", "h.1"}) {
  ModelCosts m;
  for (int i = 0; i < 2; ++i) {
    UnitCost u;
    OpCost op;
    op.name = "rtx.gelu";
    op.flops.replicated = flops;
    u.forward.push_back(op);
    u.backward.push_back(op);
    u.paramBytes.replicated = paramBytes;
    auto known = std::find(m.shardBufferNames.begin(), m.shardBufferNames.end(),
                           buffers[i]);
    if (known == m.shardBufferNames.end())
      known = m.shardBufferNames.insert(known, buffers[i]);
    Quantity bytes;
    bytes.replicated = paramBytes;
    u.shardBuffers.push_back({known - m.shardBufferNames.begin(), bytes});
    u.stateBytes.replicated = 2 * paramBytes;
    m.units.push_back(u);
  }
  m.paramBytes.replicated = 2 * paramBytes;
  m.trainingFlops = 4 * flops;
  return m;
}

/// Non-GEMM FLOPs are priced at the calibrated vector rate when the profile
/// has one, else at peak x matmul_efficiency.
TEST(PlanCost, VectorRate) {
  llvm::Expected<HardwareProfile> profile = loadHardwareProfile("cpu-host");
  ASSERT_TRUE(bool(profile));
  profile->opOverhead = 0;
  ModelCosts m = twoUnits(1e6);
  Plan plan;
  Estimate datasheet = CostModel(m, nullptr, *profile, {}).estimate(plan);
  ASSERT_TRUE(datasheet.feasible) << datasheet.infeasible;
  EXPECT_NEAR(datasheet.computeTime,
              4e9 / (profile->peak("f32") * profile->matmulEfficiency), 1e-9);
  profile->vectorFlops = 1e9;
  Estimate calibrated = CostModel(m, nullptr, *profile, {}).estimate(plan);
  EXPECT_NEAR(calibrated.computeTime, 4.0, 1e-9);
}

/// Data parallelism as the programs run it: buckets of bucket-bytes, the
/// last one exposed; ZeRO's collectives, one per flat buffer, synchronous; on a CPU only
/// an asynchronous collective's latency hides.
TEST(PlanCost, DataParallelExposure) {
  llvm::Expected<HardwareProfile> gpu = loadHardwareProfile("dgx-a100");
  llvm::Expected<HardwareProfile> cpu = loadHardwareProfile("cpu-host");
  ASSERT_TRUE(gpu && cpu);
  CostSettings settings;
  settings.globalBatch = 8;
  settings.bucketBytes = 1e6;
  // 4 MB of gradients (4 buckets), a backward of about a second on both.
  ModelCosts m = twoUnits(2e6, 1e13);
  Plan plan;
  plan.dp = 8;
  plan.microBatchSize = 1;
  plan.overlap = true;
  CostModel onGpu(m, nullptr, *gpu, settings);
  auto [link, oneNode] = onGpu.groupLink(plan, 0);
  double bucket = onGpu.collectiveTime(CommPattern::AllReduce, 1e6, 8, *link,
                                       oneNode);
  Estimate e = onGpu.estimate(plan);
  ASSERT_TRUE(e.feasible) << e.infeasible;
  EXPECT_NEAR(e.dataCommTime, 4 * bucket, 1e-12);
  // The backward hides the three early buckets; the last is exposed.
  EXPECT_NEAR(e.exposedDataCommTime, bucket, 1e-12);
  plan.overlap = false;
  EXPECT_NEAR(onGpu.estimate(plan).exposedDataCommTime, 4 * bucket, 1e-12);

  // ZeRO-2: a reduce-scatter and an all-gather per buffer, all exposed.
  plan.overlap = true;
  plan.zero = 2;
  double rs = onGpu.collectiveTime(CommPattern::ReduceScatter, 2e6, 8, *link,
                                   oneNode);
  double ag = onGpu.collectiveTime(CommPattern::AllGather, 2e6, 8, *link,
                                   oneNode);
  e = onGpu.estimate(plan);
  EXPECT_NEAR(e.dataCommTime, 2 * (rs + ag), 1e-12);
  EXPECT_NEAR(e.exposedDataCommTime, e.dataCommTime, 1e-12);

  // A buffer that spans both units (a layer's attention and MLP) moves with
  // one reduce-scatter and one all-gather, as rtx-shard-state packs it.
  ModelCosts shared = twoUnits(2e6, 1e13, {"h.0", "h.0"});
  CostModel oneBuffer(shared, nullptr, *gpu, settings);
  EXPECT_NEAR(oneBuffer.estimate(plan).dataCommTime,
              onGpu.collectiveTime(CommPattern::ReduceScatter, 4e6, 8, *link,
                                   oneNode) +
                  onGpu.collectiveTime(CommPattern::AllGather, 4e6, 8, *link,
                                       oneNode),
              1e-12);

  // On a CPU the early buckets hide only their latency.
  plan.zero = 0;
  CostModel onCpu(m, nullptr, *cpu, settings);
  auto [cpuLink, cpuOneNode] = onCpu.groupLink(plan, 0);
  CostModel::CollectiveParts parts = onCpu.collectiveParts(
      CommPattern::AllReduce, 1e6, 8, *cpuLink, cpuOneNode);
  e = onCpu.estimate(plan);
  ASSERT_TRUE(e.feasible) << e.infeasible;
  EXPECT_NEAR(e.exposedDataCommTime, 4 * parts.total() - 3 * parts.latency,
              1e-12);
}

} // namespace
