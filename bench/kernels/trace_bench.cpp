//===- trace_bench.cpp - what one op span costs ---------------------------===//
//
// The cost a trace adds to every kernel call of an emitted program
// (ctx.opBegin / ctx.opEnd around it), with tracing on and off, next to its
// peer: the two clock reads that any span needs. The step's overhead is
// this cost times the spans per step (docs/benchmarks.md).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/program/Program.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

using namespace rtxrt;

namespace {
const OpInfo kOp = {"rtx.matmul", "loc(\"bench\":1:1)", 1e6, 1e4};

void BM_ClockReadsPeer(benchmark::State &state) {
  for (auto _ : state) {
    int64_t a = Tracer::now();
    int64_t b = Tracer::now();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_ClockReadsPeer);

void opSpans(benchmark::State &state, bool tracing) {
  MeshLayout mesh({"dp"}, {1});
  auto comm = makeLocalCommunicator();
  StepContext ctx(0, mesh, *comm);
  Tracer tracer;
  char dir[] = "/tmp/rtx-trace-bench-XXXXXX";
  if (tracing && mkdtemp(dir)) {
    TraceOptions options;
    options.dir = dir;
    // Room for every event, as a traced step has: a span that is dropped
    // would cost less than one that is kept.
    options.maxEvents = int64_t(1) << 30;
    tracer.configure(options, 0, 1);
    tracer.beginStep(1);
  }
  ctx.setTracer(&tracer);
  for (auto _ : state) {
    ctx.opBegin();
    ctx.opEnd(kOp);
  }
  state.counters["kept"] = static_cast<double>(tracer.recorded());
  if (tracing)
    rmdir(dir);
}
void BM_OpSpanTracing(benchmark::State &state) { opSpans(state, true); }
void BM_OpSpanNotTracing(benchmark::State &state) { opSpans(state, false); }
BENCHMARK(BM_OpSpanTracing);
BENCHMARK(BM_OpSpanNotTracing);
} // namespace
