//===- HardwareProfile.h - the machine a plan runs on -----------*- C++ -*-===//
//
// A hardware profile describes the devices and the links between them, as
// the auto-partitioner's cost model needs them: per device its memory, peak
// FLOP/s per element type, memory bandwidth and fixed cost per op; links as
// classes (NVSwitch, PCIe, shared memory, InfiniBand, ...) with a latency
// alpha and a bandwidth beta, and a matrix saying which class joins each
// pair of devices in a node, plus the class between nodes. rtx-calibrate
// adds what only a measurement knows: GEMM throughput by shape, elementwise
// bandwidth, and alpha-beta of each collective per group size over the real
// backend. The schema is "rtx-hardware-profile/1" (docs/planner.md).
//
// Built-in profiles (lib/Analysis/profiles/*.json, each citing where its
// figures come from) are found by name; any other argument is a file.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_HARDWAREPROFILE_H
#define RTX_ANALYSIS_HARDWAREPROFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::rtx {

/// A kind of link: time(n bytes over one hop) = alpha + n / beta.
struct LinkClass {
  std::string name;
  double alpha = 0; // seconds
  double beta = 0;  // bytes per second, each direction
  /// The time to move 1 MiB: how links are ranked when a group spans
  /// several (the slowest pair bounds a ring).
  double referenceTime() const { return alpha + double(1 << 20) / beta; }
};

/// A collective fitted by rtx-calibrate: time(n) = alpha + n / beta with n
/// the bytes of the whole tensor (all-reduce's operand, all-gather's
/// result, reduce-scatter's operand, the message of a send).
struct CollectiveFit {
  int64_t ranks = 0;
  double alpha = 0;
  double beta = 0;
};

/// A GEMM measured by rtx-calibrate ([M, K] x [K, N]).
struct MatmulSample {
  int64_t m = 0, n = 0, k = 0;
  /// The left operand stored [K, M] (a weight gradient's X^T dY).
  bool transposedLhs = false;
  std::string dtype;
  double flopsPerSecond = 0;
};

enum class CommPattern { AllReduce, AllGather, ReduceScatter, SendRecv };
/// "all_reduce", "all_gather", "reduce_scatter", "send_recv".
const char *commPatternName(CommPattern kind);

struct HardwareProfile {
  std::string name;
  std::string description;
  std::vector<std::string> sources;

  // The device (every device of the profile is alike).
  std::string deviceKind; // "gpu" or "cpu"
  std::string deviceModel;
  int64_t memoryBytes = 0;
  std::map<std::string, double> peakFlops; // by element type ("bf16")
  double memoryBandwidth = 0;              // bytes per second
  double matmulEfficiency = 1;  // share of peak large GEMMs sustain
  double opOverhead = 0;        // seconds of fixed cost per op
  /// FLOP/s of ops that are not matrix products (GELU, normalisations,
  /// optimizer updates), FLOPs as CostOpInterface counts them; 0: unknown,
  /// priced at peak x matmul_efficiency. rtx-calibrate measures it.
  double vectorFlops = 0;

  // Links.
  int64_t devicesPerNode = 1;
  std::map<std::string, LinkClass> linkClasses;
  /// devicesPerNode x devicesPerNode class names ("self" on the diagonal).
  std::vector<std::vector<std::string>> intraNode;
  std::string interNode;

  // What rtx-calibrate measured (empty: not calibrated).
  std::vector<MatmulSample> matmul;
  double elementwiseBandwidth = 0;
  std::map<CommPattern, std::vector<CollectiveFit>> collectives;
  std::string calibration; // "rtx-calibrate on HOST at DATE", or empty

  bool calibrated() const { return !calibration.empty(); }
  /// The class of the link between global devices `a` and `b` (a != b);
  /// devices fill node after node.
  const LinkClass &link(int64_t a, int64_t b) const;
  /// Peak FLOP/s for `dtype`, falling back to f32's; 0 when unknown.
  double peak(llvm::StringRef dtype) const;
  /// Sustained FLOP/s of a [M, K] x [K, N] product in `dtype`: the nearest
  /// calibrated shape (log distance), scaled by the ratio of peaks when the
  /// type differs; otherwise peak x matmul_efficiency.
  /// Samples of the same layout (`transposedLhs`) are preferred when the
  /// profile has any.
  double matmulRate(int64_t m, int64_t n, int64_t k, llvm::StringRef dtype,
                    bool transposedLhs = false) const;
  /// Bytes per second of memory-bound ops.
  double streamBandwidth() const {
    return elementwiseBandwidth > 0 ? elementwiseBandwidth : memoryBandwidth;
  }
  /// The calibrated fit of `kind` for exactly `ranks` ranks, if measured.
  std::optional<CollectiveFit> collective(CommPattern kind,
                                          int64_t ranks) const;
};

/// Parses and checks a profile; errors name the field ("device.peak_flops:
/// expected an object") and `origin` (a file name or a built-in's name).
llvm::Expected<HardwareProfile> parseHardwareProfile(llvm::StringRef json,
                                                     llvm::StringRef origin);

/// A built-in profile by name, or else a profile file.
llvm::Expected<HardwareProfile> loadHardwareProfile(llvm::StringRef nameOrPath);

/// The names of the built-in profiles, and a built-in's JSON text.
std::vector<std::string> builtinProfileNames();
std::optional<llvm::StringRef> builtinProfileText(llvm::StringRef name);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_HARDWAREPROFILE_H
