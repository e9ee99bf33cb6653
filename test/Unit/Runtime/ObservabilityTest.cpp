//===- ObservabilityTest.cpp - traces, metrics and allocator counters -----===//
//
// What docs/observability.md promises of the runtime's own figures:
// overlap_pct on cases whose hidden share is known by construction, bus
// bytes by nccl-tests' definition, the Prometheus text (quantiles, labels,
// NaN), the endpoint, a bounded trace buffer and its step window, the merge
// onto one clock, op spans timed by device events or the host clock, and
// the host allocator's counters.
//
//===----------------------------------------------------------------------===//

#include "Prometheus.h"

#include "rtxrt/core/AllocatorStats.h"
#include "rtxrt/observe/Trace.h"
#include "rtxrt/observe/TraceMerge.h"
#include "rtxrt/program/OpTiming.h"
#include "rtxrt/program/Program.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::program;

namespace {

/// Two ranks seen from rank 0: every exchange takes `delay` and returns
/// this rank's tensor twice.
class SlowCommunicator : public Communicator {
public:
  explicit SlowCommunicator(std::chrono::milliseconds delay) : delay(delay) {}
  std::vector<Tensor> exchange(const std::vector<int64_t> &, const Tensor &t,
                               const std::string &) override {
    std::this_thread::sleep_for(delay);
    return {t, t};
  }
  std::chrono::milliseconds delay;
};

void sleepFor(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

/// overlap_pct of one started all-reduce of 60 ms with `computeMs` of
/// work between its start and its wait.
double overlapWithCompute(int computeMs) {
  MeshLayout mesh({"dp"}, {2});
  SlowCommunicator comm(std::chrono::milliseconds(60));
  StepContext ctx(0, mesh, comm);
  Tensor x({256}, DType::F32);
  auto pending = ctx.start("all_reduce", {"dp"},
                           Collective::allReduce(ReduceKind::Sum), x);
  sleepFor(computeMs);
  ctx.wait(pending);
  ctx.finishStep();
  return overlapPercent(ctx.takeCommunicationStats());
}

} // namespace

// The hidden share is known by construction: compute that outlasts the
// collective hides all of it, none hides none, half of it about half. The
// margins are wide: sleeps on a loaded machine overrun, never underrun.
TEST(ObservabilityTest, OverlapOfAStartedAllReduce) {
  EXPECT_GE(overlapWithCompute(150), 85.0);
  EXPECT_LE(overlapWithCompute(0), 15.0);
  double half = overlapWithCompute(30);
  EXPECT_GE(half, 20.0);
  EXPECT_LE(half, 80.0);
}

TEST(ObservabilityTest, SynchronousCollectivesHideNothing) {
  MeshLayout mesh({"dp"}, {2});
  SlowCommunicator comm(std::chrono::milliseconds(5));
  StepContext ctx(0, mesh, comm);
  Tensor x({1000}, DType::F32);
  ctx.collective("all_reduce", {"dp"}, Collective::allReduce(ReduceKind::Sum),
                 x);
  ctx.finishStep();
  CommunicationStats stats = ctx.takeCommunicationStats();
  EXPECT_EQ(overlapPercent(stats), 0.0);
  EXPECT_EQ(stats.collectives, 1);
  EXPECT_GT(stats.exposedAllReduceSeconds, 0.0);
  // nccl-tests' bus bytes of an all-reduce of S bytes on n ranks:
  // 2 S (n - 1) / n = S for n = 2.
  EXPECT_DOUBLE_EQ(stats.busBytes, 4000.0);
  // Taken: the next step starts from zero.
  EXPECT_EQ(ctx.takeCommunicationStats().collectives, 0);
}

TEST(ObservabilityTest, BusBytesOfAnAllGather) {
  MeshLayout mesh({"dp"}, {2});
  SlowCommunicator comm(std::chrono::milliseconds(0));
  StepContext ctx(0, mesh, comm);
  Tensor x({100}, DType::F32); // 400 bytes in, 800 gathered
  ctx.collective("all_gather", {"dp"}, Collective::allGather(0), x);
  // (n - 1) / n of the gathered bytes.
  EXPECT_DOUBLE_EQ(ctx.takeCommunicationStats().busBytes, 400.0);
}

TEST(ObservabilityTest, PrometheusText) {
  RunMetrics metrics(MetricLabels{3, "dp:2,tp:2", "run-7"});
  // Before any step: the quantiles are NaN, the count zero.
  EXPECT_NE(metrics.exposition().find("step_time_ms_count{rank=\"3\",mesh="
                                      "\"dp:2,tp:2\",run=\"run-7\"} 0"),
            std::string::npos);
  for (int ms = 1; ms <= 100; ++ms) {
    StepFigures f;
    f.ms = ms;
    f.tokensPerSecond = 1000.0 * 64 / ms;
    f.loss = 7.0 - ms / 50.0;
    f.lr = ms / 1000.0;
    metrics.step(f);
  }
  EXPECT_EQ(metrics.stepTimeQuantile(0.5), 50.0);
  EXPECT_EQ(metrics.stepTimeQuantile(0.95), 95.0);
  EXPECT_EQ(metrics.stepTimeQuantile(0.99), 99.0);
  std::string text = metrics.exposition();
  std::string labels = "{rank=\"3\",mesh=\"dp:2,tp:2\",run=\"run-7\"";
  EXPECT_NE(text.find("# TYPE step_time_ms summary"), std::string::npos);
  EXPECT_NE(text.find("step_time_ms" + labels + ",quantile=\"0.99\"} 99\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step_time_ms_sum" + labels + "} 5050\n"),
            std::string::npos);
  EXPECT_NE(text.find("step_time_ms_count" + labels + "} 100\n"),
            std::string::npos);
  EXPECT_NE(text.find("tokens_per_s" + labels + "} 640\n"), std::string::npos);
  // The last step's loss (7 - 100 / 50).
  EXPECT_NE(text.find("loss" + labels + "} 5\n"), std::string::npos) << text;
  // The last step's learning rate (100 / 1000).
  EXPECT_NE(text.find("\nlr" + labels + "} 0.10000000000000001\n"),
            std::string::npos)
      << text;
  // No communication: overlap and bandwidth are not numbers, not 0.
  EXPECT_NE(text.find("overlap_pct" + labels + "} NaN\n"), std::string::npos);
  EXPECT_NE(text.find("net_bw_gbps" + labels + "} NaN\n"), std::string::npos);
  EXPECT_NE(text.find("oom_count" + labels + ",device=\"host\"} 0\n"),
            std::string::npos);
  // The held-out loss appears with the first evaluation (--eval-data).
  EXPECT_EQ(text.find("eval_loss"), std::string::npos);
  metrics.evaluation(40, 2.5);
  text = metrics.exposition();
  EXPECT_NE(text.find("# TYPE eval_loss gauge"), std::string::npos);
  EXPECT_NE(text.find("eval_loss" + labels + "} 2.5\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("eval_step" + labels + "} 40\n"), std::string::npos);
}

TEST(ObservabilityTest, MetricsEndpointServesTheText) {
  RunMetrics metrics(MetricLabels{0, "dp:1", "r"});
  StepFigures f;
  f.ms = 12.5;
  metrics.step(f);
  MetricsServer server(metrics, "127.0.0.1", 0);
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_NE(response->body.find("step_time_ms_sum{rank=\"0\",mesh=\"dp:1\","
                                "run=\"r\"} 12.5"),
            std::string::npos);
  EXPECT_EQ(response->get_header_value("Content-Type"),
            "text/plain; version=0.0.4; charset=utf-8");
  // A port in use is refused, naming it.
  try {
    MetricsServer second(metrics, "127.0.0.1", server.port());
    FAIL() << "a second server on one port";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(server.port())),
              std::string::npos);
  }
}

TEST(ObservabilityTest, TraceSteps) {
  TraceOptions o;
  TraceOptions::parseSteps("5:8", o);
  EXPECT_EQ(o.firstStep, 5);
  EXPECT_EQ(o.lastStep, 8);
  TraceOptions::parseSteps("3", o);
  EXPECT_EQ(o.firstStep, 3);
  EXPECT_EQ(o.lastStep, 3);
  TraceOptions::parseSteps(":4", o);
  EXPECT_EQ(o.firstStep, 1);
  EXPECT_EQ(o.lastStep, 4);
  for (const char *bad : {"", ":", "0:3", "a:b", "8:5", "2:x", "-1"})
    EXPECT_THROW(TraceOptions::parseSteps(bad, o), Error) << bad;
}

static std::string temporaryDir() {
  char name[] = "/tmp/rtx-trace-test-XXXXXX";
  const char *dir = mkdtemp(name);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "";
}

TEST(ObservabilityTest, BoundedBufferAndStepWindow) {
  std::string dir = temporaryDir();
  TraceOptions o;
  o.dir = dir;
  o.maxEvents = 3;
  TraceOptions::parseSteps("2:2", o);
  Tracer tracer;
  tracer.configure(o, 1, 2);
  tracer.beginStep(1);
  EXPECT_FALSE(tracer.active());
  tracer.span(TraceLane::Compute, "outside", "op", 0, 10);
  tracer.endStep();
  tracer.beginStep(2);
  EXPECT_TRUE(tracer.active());
  for (int i = 0; i < 5; ++i)
    tracer.span(TraceLane::Compute, "inside", "op", i * 10, i * 10 + 5);
  tracer.endStep();
  EXPECT_EQ(tracer.recorded(), 3);
  EXPECT_EQ(tracer.dropped(), 2);
  std::ifstream in(tracer.write());
  nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 2);
  int spans = 0;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X") {
      ++spans;
      EXPECT_EQ(e["name"], "inside");
      EXPECT_EQ(e["pid"], 1);
      EXPECT_EQ(e["args"]["step"], 2);
    }
  EXPECT_EQ(spans, 3);
}

TEST(ObservabilityTest, MergeMovesRanksOntoRankZerosClock) {
  std::string dir = temporaryDir();
  for (int rank = 0; rank < 3; ++rank) {
    TraceOptions o;
    o.dir = dir;
    Tracer tracer;
    tracer.configure(o, rank, 2);
    // Rank 2's file is an earlier run's: not merged.
    tracer.setRunInfo("dp:2", rank == 2 ? "earlier" : "this");
    // Rank 1's clock runs 1000 us ahead: the same moment reads 1000 us
    // later there.
    tracer.setClockOffset(ClockOffset{rank == 1 ? 1000.0 : 0.0, 5.0, 8});
    int64_t at = 5'000'000 + (rank == 1 ? 1'000'000 : 0); // ns
    tracer.span(TraceLane::Compute, "same moment", "op", at, at + 1000);
    tracer.write();
  }
  MergedTrace merged = mergeRankTraces(dir, 3, "this");
  EXPECT_EQ(merged.ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(merged.stale, (std::vector<int64_t>{2}));
  EXPECT_EQ(merged.missing, (std::vector<int64_t>{2}));
  // A file of a rank past the world (an earlier, larger run) is left out.
  EXPECT_EQ(mergeRankTraces(dir, 2).ranks, (std::vector<int64_t>{0, 1}));
  std::ifstream in(merged.path);
  nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<double> ts;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X")
      ts.push_back(e["ts"].get<double>());
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_DOUBLE_EQ(ts[0], 0.0);
  EXPECT_DOUBLE_EQ(ts[1], 0.0);
  EXPECT_EQ(trace["otherData"]["clock_offsets_us"]["1"], 1000.0);
  EXPECT_EQ(trace["otherData"]["time_origin_us"], 5000.0);
}

TEST(ObservabilityTest, HostAllocatorCounts) {
  AllocatorStats before = hostAllocatorStats();
  {
    // Larger than any cached block of earlier tests: a fresh allocation.
    Tensor big({3 << 20}, DType::F32);
    AllocatorStats during = hostAllocatorStats();
    EXPECT_GE(during.inUseBytes - before.inUseBytes, int64_t(12) << 20);
    EXPECT_GE(during.peakBytes, during.inUseBytes);
    EXPECT_GT(during.allocations, before.allocations);
  }
  AllocatorStats after = hostAllocatorStats();
  EXPECT_LT(after.inUseBytes, before.inUseBytes + (int64_t(12) << 20));
  // The freed block is kept for reuse: kept but unused, i.e. fragmentation.
  EXPECT_GT(after.fragmentationPercent(), 0.0);
  EXPECT_EQ(after.failures, before.failures);
}

// A step's peak (step_peak_bytes): the window starts with what is in use
// and rises only with what is allocated after its start.
TEST(ObservabilityTest, HostAllocatorPeakWindow) {
  {
    Tensor earlier({4 << 20}, DType::F32); // 16 MiB, freed before the window
  }
  beginHostPeakWindow();
  AllocatorStats start = hostAllocatorStats();
  EXPECT_EQ(start.windowPeakBytes, start.inUseBytes);
  EXPECT_GE(start.peakBytes, start.inUseBytes + (int64_t(16) << 20));
  {
    Tensor now({1 << 20}, DType::F32); // 4 MiB
    AllocatorStats during = hostAllocatorStats();
    EXPECT_EQ(during.windowPeakBytes, start.inUseBytes + (int64_t(4) << 20));
  }
  AllocatorStats after = hostAllocatorStats();
  EXPECT_EQ(after.windowPeakBytes, start.inUseBytes + (int64_t(4) << 20));
  EXPECT_LT(after.windowPeakBytes, after.peakBytes);
}

namespace {
/// A device whose marks are 1 us apart on its clock (mark i at i us).
class FakeEventTimer : public DeviceEventTimer {
public:
  explicit FakeEventTimer(int *resolves) : resolves_(resolves) {}
  void begin() override { marks_ = 1; }
  int64_t mark() override { return marks_++; }
  std::vector<int64_t> resolve() override {
    ++*resolves_;
    std::vector<int64_t> ns;
    for (int64_t i = 0; i < marks_; ++i)
      ns.push_back(i * 1000);
    return ns;
  }

private:
  int *resolves_;
  int64_t marks_ = 0;
};
} // namespace

TEST(ObservabilityTest, GpuOpsAreTimedByDeviceEventsAfterTheStep) {
  std::string dir = temporaryDir();
  TraceOptions o;
  o.dir = dir;
  o.peakTflops = 989.4;
  TraceOptions::parseSteps("2:2", o);
  Tracer tracer;
  tracer.configure(o, 0, 1);
  EXPECT_FALSE(tracingWantsOpTiming(nullptr, 2));
  EXPECT_FALSE(tracingWantsOpTiming(&tracer, 1));
  EXPECT_TRUE(tracingWantsOpTiming(&tracer, 2));
  int resolves = 0;
  DeviceRuntime device;
  device.makeEventTimer = [&resolves] {
    return std::make_unique<FakeEventTimer>(&resolves);
  };
  OpInfo matmul{"rtx.matmul", "loc(here)", 2 * 8 * 64 * 10, 4928, "matmul"};
  OpInfo gelu{"rtx.gelu", "loc(there)", 512, 4096, "elementwise"};
  OpTiming timing(&device);
  tracer.beginStep(2);
  timing.beginStep(tracer);
  for (const OpInfo *op : {&matmul, &gelu}) {
    timing.opBegin();
    timing.opEnd(tracer, *op);
  }
  // Nothing is read from the device inside the step.
  EXPECT_EQ(tracer.recorded(), 0);
  EXPECT_EQ(resolves, 0);
  timing.endStep(tracer);
  tracer.endStep();
  EXPECT_EQ(resolves, 1);
  std::ifstream in(tracer.write());
  nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["op_clock"],
            "device: CUDA events on the compute stream");
  EXPECT_EQ(trace["otherData"]["peak_flops"], 989.4e12);
  std::vector<nlohmann::json> ops;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X")
      ops.push_back(e);
  ASSERT_EQ(ops.size(), 2u);
  // Marks 1-2 and 3-4: 1 us each, 2 us apart, on the device lane.
  EXPECT_EQ(ops[0]["tid"], static_cast<int>(TraceLane::Device));
  EXPECT_EQ(ops[0]["args"]["kind"], "matmul");
  EXPECT_EQ(ops[0]["args"]["flops"], 10240);
  EXPECT_EQ(ops[0]["args"]["step"], 2);
  EXPECT_DOUBLE_EQ(ops[0]["dur"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(ops[1]["ts"].get<double>() - ops[0]["ts"].get<double>(),
                   2.0);
  EXPECT_EQ(ops[1]["args"]["kind"], "elementwise");
}

TEST(ObservabilityTest, HostOpsAreTimedByTheHostClock) {
  std::string dir = temporaryDir();
  TraceOptions o;
  o.dir = dir;
  Tracer tracer;
  tracer.configure(o, 0, 1);
  OpInfo op{"rtx.add", "loc(here)", 4, 48};
  DeviceRuntime emulation; // no event timer: its kernels run in the call
  for (const DeviceRuntime *device :
       {(const DeviceRuntime *)nullptr, (const DeviceRuntime *)&emulation}) {
    OpTiming timing(device);
    tracer.beginStep(1);
    timing.beginStep(tracer);
    timing.opBegin();
    timing.opEnd(tracer, op);
    timing.endStep(tracer);
    tracer.endStep();
  }
  std::ifstream in(tracer.write());
  nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["op_clock"], "host");
  EXPECT_FALSE(trace["otherData"].contains("peak_flops"));
  int ops = 0;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "X") {
      ++ops;
      EXPECT_EQ(e["tid"], static_cast<int>(TraceLane::Compute));
      EXPECT_FALSE(e["args"].contains("kind"));
    }
  EXPECT_EQ(ops, 2);
}
