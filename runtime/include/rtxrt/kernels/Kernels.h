//===- Kernels.h - CPU kernels for the rtx ops ------------------*- C++ -*-===//
//
// The CPU kernels of the rtx ops: rtxrt/kernels/KernelApi.def declares them (and
// documents their semantics) once for the CPU and the GPU; this header
// expands it in namespace rtxrt, plus the CPU-only parameter initialisation
// and thread control.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELS_H
#define RTXRT_KERNELS_H

#include "rtxrt/core/KernelEnums.h"
#include "rtxrt/core/Tensor.h"

#include <string>
#include <vector>

namespace rtxrt {

// The kernels, documented where they are declared once for both devices.
#define RTX_KERNEL(Result, name, parameters) Result name parameters;
#define RTX_KERNEL_HELPER(Result, name, parameters) Result name parameters;
#define RTX_KERNEL_FORWARD(Result, name, parameters, arguments)                \
  inline Result name parameters { return rtxrt::name arguments; }
#include "rtxrt/kernels/KernelApi.def"

// --- initialisation ----------------------------------------------------------
/// A parameter's initial value: element i (row-major over globalShape) is
/// drawn from the counter-based generator keyed by (seed, name, i), so any
/// shard of it can be produced alone: `globalOffsets` gives the shard's
/// origin in the global tensor (empty: the whole tensor).
Tensor initParameter(const std::string &name, InitKind kind, double a, double b,
                     int64_t seed, const Shape &shape, DType dtype,
                     const Shape &globalShape = {},
                     const std::vector<int64_t> &globalOffsets = {});

// --- threads -----------------------------------------------------------------
/// Threads the CPU kernels may use (OpenMP; OpenBLAS itself is kept on one
/// thread and GEMMs are split over a shape-fixed tile grid). Results do not
/// depend on it: every reduction has a fixed order.
void setNumThreads(int numThreads);
int getNumThreads();

} // namespace rtxrt

#endif // RTXRT_KERNELS_H
