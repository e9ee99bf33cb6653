//===- DeviceFigures.h - Peak figures of GPUs and CPUs ----------*- C++ -*-===//
//
// What rtx-topology cannot measure, it looks up (GPUs: datasheet figures by
// name) or derives by a stated rule (CPUs: cores x clock x FLOPs per cycle
// from the ISA). Both are starting points that rtx-calibrate overwrites with
// measured values (docs/topology.md).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_TOPOLOGY_DEVICEFIGURES_H
#define RTX_TOOLS_RTX_TOPOLOGY_DEVICEFIGURES_H

#include <string>
#include <vector>

namespace rtx::topology {

/// Dense peak FLOP/s per element type and memory figures of one device.
struct PeakFigures {
  double f32 = 0, bf16 = 0, f16 = 0;
  double tf32 = 0;            ///< 0: no TF32 tensor cores (before Ampere)
  double memoryBandwidth = 0; ///< bytes/s
  double memoryBytes = 0;     ///< 0 when the table does not know
};

/// Datasheet figures of the NVIDIA GPU whose `nvidia-smi` name is `name`
/// ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB").
/// Returns false, figures untouched, when the GPU is not in the table.
bool lookupGpu(const std::string &name, PeakFigures &figures,
               std::string &matchedAs);

/// The f32 FLOPs per cycle per core the rule credits a CPU with, given the
/// ISA flags of /proc/cpuinfo (see the rule in DeviceFigures.cpp).
double cpuF32FlopsPerCycle(const std::vector<std::string> &isa,
                           std::string &rule);

} // namespace rtx::topology

#endif // RTX_TOOLS_RTX_TOPOLOGY_DEVICEFIGURES_H
