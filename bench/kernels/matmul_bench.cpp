//===- matmul_bench.cpp - rtxrt::matmul against cblas_sgemm ---------------===//
//
// Peer: a direct cblas_sgemm call on the same OpenBLAS, with OpenBLAS's own
// threads (its normal configuration). rtxrt::matmul keeps OpenBLAS on one
// thread and splits the output over a shape-fixed tile grid for
// determinism; this benchmark shows what that costs. Both report FLOP/s
// (2*N^3 per iteration) so the ratio reads directly.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <thread>

namespace {

rtxrt::Tensor randomMatrix(int64_t n, unsigned seed) {
  rtxrt::Tensor t({n, n}, rtxrt::DType::F32);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float *p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = dist(gen);
  return t;
}

void setFlops(benchmark::State &state, int64_t n) {
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void BM_RtxrtMatmul(benchmark::State &state) {
  int64_t n = state.range(0);
  rtxrt::Tensor a = randomMatrix(n, 1), b = randomMatrix(n, 2);
  for (auto _ : state) {
    rtxrt::Tensor c = rtxrt::matmul(a, b, false, false);
    benchmark::DoNotOptimize(c.raw());
  }
  setFlops(state, n);
}

void BM_CblasSgemm(benchmark::State &state) {
  int64_t n = state.range(0);
  rtxrt::Tensor a = randomMatrix(n, 1), b = randomMatrix(n, 2);
  // The peer allocates its output each iteration too, as rtxrt::matmul does.
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(threads > 0 ? threads : 1);
  for (auto _ : state) {
    rtxrt::Tensor c({n, n}, rtxrt::DType::F32);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                static_cast<int>(n), static_cast<int>(n), 1.0f, a.data<float>(),
                static_cast<int>(n), b.data<float>(), static_cast<int>(n), 0.0f,
                c.data<float>(), static_cast<int>(n));
    benchmark::DoNotOptimize(c.raw());
  }
  // Park OpenBLAS's threads again so that they do not spin against the
  // benchmarks that follow.
  openblas_set_num_threads(1);
  setFlops(state, n);
}

} // namespace

BENCHMARK(BM_RtxrtMatmul)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CblasSgemm)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
