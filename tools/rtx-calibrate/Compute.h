//===- Compute.h - GEMM throughput, bandwidth and per-op overhead -*- C++ -*-=//
//
// What a profile's datasheet numbers cannot say about a CPU rank: the GEMM
// throughput the runtime's matmul kernel reaches at each shape (OpenBLAS
// sgemm over rtxrt's fixed tile grid, so small shapes fall far below peak),
// the bandwidth its elementwise kernels reach, and the fixed cost of one
// kernel call. Each is timed through the kernels emitted programs call
// (rtxrt::matmul, rtxrt::binary), fresh result tensor included, as a
// program allocates one per op.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_CALIBRATE_COMPUTE_H
#define RTX_TOOLS_RTX_CALIBRATE_COMPUTE_H

#include "Session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rtx::calibrate {

/// [m, k] x [k, n]: m tokens through a layer of k inputs and n outputs.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) *
           static_cast<double>(k);
  }
};

/// Parses "M,N,K;M,N,K...". Throws std::invalid_argument naming the bad
/// entry.
std::vector<GemmShape> parseGemmShapes(const std::string &text);
/// m in {64, 256, 1024, 4096} x (n, k) of the layers of a GPT-2-sized
/// model; --quick: m in {64, 256, 1024} x (n, k) in {(64, 64), (1024,
/// 1024)}.
std::vector<GemmShape> defaultGemmShapes(bool quick);

struct GemmResult {
  GemmShape shape;
  /// [K, M] read as its transpose: the layout of a weight gradient, X^T dY.
  bool transposedLhs = false;
  double seconds = 0, flopsPerS = 0;
};

struct ComputePlan {
  std::vector<GemmShape> gemmShapes;
  /// Elements of each operand of the bandwidth kernel (f32).
  int64_t elementwiseElements = 16 << 20;
  /// Elements of the vector-rate kernel's operand (f32).
  int64_t vectorElements = 4 << 20;
  TimingPlan timing;
};

struct ComputeResult {
  std::vector<GemmResult> gemm;
  /// Shapes the time budget left out.
  std::vector<GemmShape> skipped;
  /// Bytes read and written per second by a large f32 add.
  double elementwiseBandwidth = 0;
  /// Seconds of a one-element add, allocation included.
  double opOverheadS = 0;
  /// FLOP/s of the GELU (tanh) kernel, FLOPs as rtx.gelu counts them.
  double vectorFlopsPerS = 0;
};

/// Runs on every rank at once (under a launcher the ranks share the machine
/// as a program's ranks do); each figure is the slowest rank's. GEMM shapes
/// run from the fewest flops up while their predicted time fits before
/// `deadline` (agreed seconds since the session began).
ComputeResult measureCompute(Session &session, const ComputePlan &plan,
                             double deadline);

} // namespace rtx::calibrate

#endif // RTX_TOOLS_RTX_CALIBRATE_COMPUTE_H
