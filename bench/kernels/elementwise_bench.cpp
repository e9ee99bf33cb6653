//===- elementwise_bench.cpp - rtxrt add against memcpy -------------------===//
//
// An elementwise add of n floats is memory-bound: it reads 2n floats and
// writes n. Its peer is a plain memcpy that moves the same bytes (reads 1.5n
// floats and writes 1.5n into a buffer allocated once), so both report the
// same bytes per iteration and their bytes/s compare directly. rtxrt::binary
// allocates its result each call, as the executor does; that cost is part
// of what is measured.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

void setBytes(benchmark::State &state, int64_t n) {
  // Bytes touched per iteration: two inputs read, one output written.
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * n *
                          static_cast<int64_t>(sizeof(float)));
}

void BM_RtxrtAdd(benchmark::State &state) {
  int64_t n = state.range(0);
  rtxrt::Tensor a({n}, rtxrt::DType::F32), b({n}, rtxrt::DType::F32);
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = static_cast<float>(i % 101);
    b.data<float>()[i] = static_cast<float>(i % 37);
  }
  for (auto _ : state) {
    rtxrt::Tensor c = rtxrt::binary(rtxrt::BinaryKind::Add, a, b);
    benchmark::DoNotOptimize(c.raw());
  }
  setBytes(state, n);
}

void BM_Memcpy(benchmark::State &state) {
  int64_t n = state.range(0);
  int64_t count = 3 * n / 2;
  std::vector<float> src(count, 1.0f), dst(count, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), count * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  setBytes(state, n);
}

} // namespace

BENCHMARK(BM_RtxrtAdd)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
BENCHMARK(BM_Memcpy)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24)->UseRealTime();
