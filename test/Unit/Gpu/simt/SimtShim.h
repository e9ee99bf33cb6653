//===- SimtShim.h - the fast kernels' CUDA, simulated on the CPU -*- C++
//-*-===//
//
// Force-included (-include) into the fast kernels' sources compiled as C++
// for rtxrt-gpu-simt-tests (see CMakeLists.txt): just enough of CUDA for
// kernels written with DeviceReduce.h to run on the host, slowly, with the
// semantics they rely on. A launch runs its blocks one after another on one
// std::thread per thread of a block, so a block's threads really run
// concurrently; __syncthreads is a barrier of the block, __shfl_xor_sync an
// exchange between two barriers of the warp, __shared__ a static (one block
// runs at a time). Rewrite.cmake turns `kernel<<<grid, block, 0,
// stream>>>(args)` into simLaunch(kernel, SimConfig(grid, block, 0, stream),
// args).
//
// What it does not model: warps running ahead of each other without a
// barrier (every warp shuffle synchronises its warp here), shuffles or
// barriers that only some lanes reach (every lane of the warp or block must
// arrive), memory ordering beyond the barriers, tensor cores, and speed.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TEST_UNIT_GPU_SIMT_SIMTSHIM_H
#define RTX_TEST_UNIT_GPU_SIMT_SIMTSHIM_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

// cuda_bf16.h's host_defines.h gives these their nvcc meanings; here a
// kernel is a plain function and shared memory a static.
#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static

struct SimIndex {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local SimIndex threadIdx, blockIdx;
inline SimIndex blockDim, gridDim;

/// One warp's exchange: each lane writes its value, then reads its
/// partner's, with the whole warp waiting before and after.
struct SimWarp {
  std::barrier<> arrived{32};
  unsigned char slots[32][8];
};
inline std::unique_ptr<std::barrier<>> simBlockBarrier;
inline std::vector<std::unique_ptr<SimWarp>> simWarps;

inline void __syncthreads() { simBlockBarrier->arrive_and_wait(); }

template <typename T> T __shfl_xor_sync(unsigned, T value, int laneMask) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  SimWarp &warp = *simWarps[threadIdx.x / 32];
  unsigned lane = threadIdx.x % 32;
  std::memcpy(warp.slots[lane], &value, sizeof(T));
  warp.arrived.arrive_and_wait();
  T partner;
  std::memcpy(&partner, warp.slots[lane ^ laneMask], sizeof(T));
  warp.arrived.arrive_and_wait();
  return partner;
}

/// The launch configuration (dynamic shared memory and stream ignored).
struct SimConfig {
  SimIndex grid, block;
  SimConfig(dim3 g, int threads, int, int)
      : grid{g.x, g.y, g.z}, block{static_cast<unsigned>(threads), 1, 1} {}
  SimConfig(unsigned blocks, int threads, int, int)
      : grid{blocks, 1, 1}, block{static_cast<unsigned>(threads), 1, 1} {}
  SimConfig(int blocks, int threads, int, int)
      : SimConfig(static_cast<unsigned>(blocks), threads, 0, 0) {}
};

/// Launches so far (a test can check the fast kernels ran at all).
inline long simLaunches = 0;

template <typename... Params, typename... Args>
void simLaunch(void (*kernel)(Params...), SimConfig config, Args... args) {
  ++simLaunches;
  gridDim = config.grid;
  blockDim = config.block;
  unsigned threadCount = config.block.x;
  simBlockBarrier = std::make_unique<std::barrier<>>(threadCount);
  simWarps.clear();
  for (unsigned w = 0; w < (threadCount + 31) / 32; ++w)
    simWarps.push_back(std::make_unique<SimWarp>());
  // One std::thread per thread of a block, running the blocks in turn: all
  // of a block's threads finish it before any starts the next (its shared
  // memory is reused).
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < threadCount; ++t)
    threads.emplace_back([&, t] {
      threadIdx = {t, 0, 0};
      for (unsigned by = 0; by < config.grid.y; ++by)
        for (unsigned bx = 0; bx < config.grid.x; ++bx) {
          blockIdx = {bx, by, 0};
          kernel(args...);
          simBlockBarrier->arrive_and_wait();
        }
    });
  for (std::thread &thread : threads)
    thread.join();
}

/// Replaces check(cudaGetLastError(), what): a simulated launch has no
/// launch errors.
inline void simCheck(const char *) {}

namespace rtxrt::gpu::detail {
/// Replaces the runtime's stream (the launches ignore it).
inline int stream() { return 0; }
} // namespace rtxrt::gpu::detail

#endif // RTX_TEST_UNIT_GPU_SIMT_SIMTSHIM_H
