//===- ProbeCosts.h - the costs of probe programs, combined ----*- C++ -*-===//
//
// rtx-auto-partition compiles the model a few times with the real passes
// (one device; tp=2; tp=2 with sequence parallelism; dp=2), each forward op
// marked with its unit (`rtx.stage` = unit index, units cut at the layer
// boundaries). readProbe() collects what one such program costs, per unit
// and phase; combineProbes() matches the programs op by op and says, for
// each quantity, which part tp splits and whether the micro-batch scales
// it (PlanCost.h's ModelCosts).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PROBECOSTS_H
#define RTX_ANALYSIS_PROBECOSTS_H

#include "rtx/Analysis/PlanCost.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::rtx::planner {

struct ProbeOp {
  std::string name;
  double flops = 0, bytes = 0;
  SmallVector<int64_t, 3> mnk;
  bool transposedLhs = false; // CostOpInterface::isContractionLhsTransposed
  SmallVector<int64_t> shape; // of the first result
  bool cheapToRecompute = false;
  /// rtx-recompute=full computes it again in the backward pass: a backward
  /// op reads its result, or that of an op computed again from it, up to
  /// the values that leave a unit (kept). Ops none of whose results the
  /// backward reads (a projection that feeds a residual add) are not.
  bool recomputedWhenFull = false;
};

struct ProbeComm {
  CommPattern kind = CommPattern::AllReduce;
  double bytes = 0; // the whole tensor
  bool batch = true; // an activation (batch-major), not a weight
};

struct ProbeUnit {
  std::vector<ProbeOp> forward, backward;
  std::vector<ProbeComm> forwardComm, backwardComm;
  double savedBytes = 0, savedSelectiveBytes = 0, boundaryBytes = 0;
  std::string location;
};

struct ProbeProgram {
  std::vector<ProbeUnit> units;
  std::vector<ProbeOp> optimizer;
  std::vector<ProbeComm> optimizerComm;
  /// By parameter name: its unit and the bytes of it and of its state.
  struct Param {
    int64_t unit = 0;
    double bytes = 0, stateBytes = 0;
    int64_t elements = 0;
  };
  std::map<std::string, Param> params;
  int64_t modelBatch = 1, sequenceLength = 1;
  std::string dtype = "f32";
};

/// Reads the step function of a probe program: units from `rtx.stage`,
/// phases from `rtx.backward`, collectives over `axis` (others ignored).
ProbeProgram readProbe(func::FuncOp function, int64_t units,
                       llvm::StringRef axis);

/// Combines the one-device probe with the tp=2 probe (with sequence
/// parallelism or not) and the dp=2 probe. Without a dp=2 probe (a model
/// batch dp cannot halve), every op of a unit is taken to grow with the
/// micro-batch, in the GEMM dimension its tokens divide.
ModelCosts combineProbes(const ProbeProgram &one, const ProbeProgram &tp2,
                         const ProbeProgram *dp2, bool sequenceParallel);

/// The ops of a forward model that compute (not parameters, inputs or
/// constants, nor ops computed from parameters and constants alone), in
/// order; the units of the planner are cut between them at the layer
/// boundaries, as rtx-split-stages cuts stages.
SmallVector<Operation *> forwardComputingOps(func::FuncOp function);

} // namespace mlir::rtx::planner

#endif // RTX_ANALYSIS_PROBECOSTS_H
