//===- DeviceFigures.cpp - Peak figures of GPUs and CPUs ------------------===//

#include "DeviceFigures.h"

#include <algorithm>

namespace rtx::topology {

namespace {

constexpr double T = 1e12;
constexpr double GBs = 1e9;
constexpr double GiB = 1024.0 * 1024 * 1024;

struct GpuEntry {
  const char *pattern; ///< a substring of the nvidia-smi name
  double f32, tf32, bf16, f16, bandwidth, memory;
};

// NVIDIA datasheet figures, dense (the sparsity figures are twice these).
//  - f32 is the CUDA-core FP32 peak: rtx's cuBLASLt calls use strict f32
//    unless a program runs with --tf32 (gpu::setTf32), whose peak
//    is tf32 (0 before Ampere: the profile then has no tf32 entry).
//  - bf16/f16 are the tensor-core peaks. V100 and T4 have no bf16 tensor
//    cores: their bf16 is given the f32 figure.
//  - memory is nominal; nvidia-smi's memory.total replaces it when known.
// Most specific first: "A10" is a substring of "A100", "L4" of "L40".
const GpuEntry kGpus[] = {
    {"H200 NVL", 60 * T, 417.5 * T, 835.5 * T, 835.5 * T, 4800 * GBs,
     141 * GiB},
    {"H200", 67 * T, 494.7 * T, 989.4 * T, 989.4 * T, 4800 * GBs, 141 * GiB},
    {"H100 NVL", 60 * T, 417.5 * T, 835.5 * T, 835.5 * T, 3900 * GBs, 94 * GiB},
    {"H100 PCIe", 51 * T, 378 * T, 756.5 * T, 756.5 * T, 2000 * GBs, 80 * GiB},
    // SXM5, HBM3 ("NVIDIA H100 80GB HBM3").
    {"H100", 67 * T, 494.7 * T, 989.4 * T, 989.4 * T, 3350 * GBs, 80 * GiB},
    {"A100-SXM4-80GB", 19.5 * T, 156 * T, 312 * T, 312 * T, 2039 * GBs,
     80 * GiB},
    {"A100 80GB PCIe", 19.5 * T, 156 * T, 312 * T, 312 * T, 1935 * GBs,
     80 * GiB},
    // The 40 GB parts, SXM4 and PCIe.
    {"A100", 19.5 * T, 156 * T, 312 * T, 312 * T, 1555 * GBs, 40 * GiB},
    {"A30", 10.3 * T, 82 * T, 165 * T, 165 * T, 933 * GBs, 24 * GiB},
    {"A10", 31.2 * T, 62.5 * T, 125 * T, 125 * T, 600 * GBs, 24 * GiB},
    {"L40S", 91.6 * T, 183 * T, 362.05 * T, 362.05 * T, 864 * GBs, 48 * GiB},
    {"L40", 90.5 * T, 90.5 * T, 181 * T, 181 * T, 864 * GBs, 48 * GiB},
    {"L4", 30.3 * T, 60 * T, 121 * T, 121 * T, 300 * GBs, 24 * GiB},
    {"V100S", 16.4 * T, 0, 16.4 * T, 130 * T, 1134 * GBs, 32 * GiB},
    {"V100-PCIE", 14 * T, 0, 14 * T, 112 * T, 900 * GBs, 16 * GiB},
    // SXM2.
    {"V100", 15.7 * T, 0, 15.7 * T, 125 * T, 900 * GBs, 16 * GiB},
    {"T4", 8.1 * T, 0, 8.1 * T, 65 * T, 320 * GBs, 16 * GiB},
};

bool has(const std::vector<std::string> &isa, const char *flag) {
  return std::find(isa.begin(), isa.end(), flag) != isa.end();
}

} // namespace

bool lookupGpu(const std::string &name, PeakFigures &figures,
               std::string &matchedAs) {
  for (const GpuEntry &gpu : kGpus) {
    if (name.find(gpu.pattern) == std::string::npos)
      continue;
    figures.f32 = gpu.f32;
    figures.tf32 = gpu.tf32;
    figures.bf16 = gpu.bf16;
    figures.f16 = gpu.f16;
    figures.memoryBandwidth = gpu.bandwidth;
    figures.memoryBytes = gpu.memory;
    // Capacity variants of one model in its name ("-32GB", "-80GB").
    if (name.find("32GB") != std::string::npos)
      figures.memoryBytes = 32 * GiB;
    else if (name.find("80GB") != std::string::npos)
      figures.memoryBytes = 80 * GiB;
    matchedAs = gpu.pattern;
    return true;
  }
  return false;
}

// The rule: FLOPs per cycle per core = f32 lanes of the widest vector unit
// x 2 (a fused multiply-add counts two) x the number of such FMA pipes that
// every part with the flag has, which is the conservative count:
//  - AVX-512F + FMA: 16 lanes x 2 x 1 pipe = 32. Xeons with two 512-bit FMA
//    pipes (most Gold/Platinum) and Zen 5 reach 64; Zen 4 and one-pipe Xeons
//    reach 32.
//  - AVX2 + FMA: 8 lanes x 2 x 1 pipe = 16. Haswell and later Intel cores
//    and Zen 2 and later have two 256-bit pipes (32); Zen 1 has the
//    equivalent of one (16).
//  - AVX without FMA: separate 8-lane add and multiply = 16, halved to 8
//    because a GEMM cannot keep both busy every cycle.
//  - SSE2 (every x86-64): 4 lanes, 4.
//  - AArch64 ASIMD: 4 lanes x 2 x 1 pipe = 8 (Neoverse cores have 2-4).
// The calibrated matmul_efficiency then says what fraction of this rtx's
// GEMMs (OpenBLAS) sustain; rtx-calibrate measures both.
double cpuF32FlopsPerCycle(const std::vector<std::string> &isa,
                           std::string &rule) {
  if (has(isa, "avx512f") && has(isa, "fma")) {
    rule = "AVX-512 FMA: 16 lanes x 2 x 1 pipe = 32 f32 FLOP/cycle/core";
    return 32;
  }
  if (has(isa, "avx2") && has(isa, "fma")) {
    rule = "AVX2 FMA: 8 lanes x 2 x 1 pipe = 16 f32 FLOP/cycle/core";
    return 16;
  }
  if (has(isa, "avx")) {
    rule = "AVX without FMA: 8 f32 FLOP/cycle/core";
    return 8;
  }
  if (has(isa, "asimd")) {
    rule = "ASIMD FMA: 4 lanes x 2 x 1 pipe = 8 f32 FLOP/cycle/core";
    return 8;
  }
  rule = "SSE2: 4 f32 FLOP/cycle/core";
  return 4;
}

} // namespace rtx::topology
