//===- SplitStages.cpp - the rtx-split-stages pass ------------------------===//
//
// Gives every computing op of a forward model a pipeline stage, cut at layer
// boundaries and balanced by the ops' own costs. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "LayerBoundaries.h"

#include "rtx/Analysis/ActivationMemory.h"
#include "rtx/Analysis/CostModel.h"
#include "rtx/Analysis/ProbeCosts.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXSPLITSTAGES
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXSplitStagesPass
    : mlir::rtx::impl::RTXSplitStagesBase<RTXSplitStagesPass> {
  using RTXSplitStagesBase::RTXSplitStagesBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal())
      return;
    int64_t count = stages;
    if (count < 1) {
      function.emitError() << "rtx-split-stages: stages=" << count
                           << " must be at least 1";
      return signalPassFailure();
    }
    computing.clear();
    collectComputing(function);
    bool byHand = llvm::any_of(computing, [](Operation *op) {
      return op->hasAttr(RTXDialect::getStageAttrName());
    });
    if (!byHand && count == 1)
      return;
    LogicalResult result =
        byHand ? completeHandSplit(function, count) : split(function, count);
    if (failed(result))
      return signalPassFailure();
    if (remarks)
      report(function);
  }

  /// The ops that compute: not parameters, inputs or constants, nor ops
  /// computed from parameters and constants alone (each stage that uses
  /// those keeps its own copy).
  void collectComputing(func::FuncOp function) {
    computing = planner::forwardComputingOps(function);
  }

  LogicalResult completeHandSplit(func::FuncOp function, int64_t count) {
    int64_t current = 0;
    for (Operation *op : computing) {
      auto stage = op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName());
      if (!stage) {
        op->setAttr(RTXDialect::getStageAttrName(),
                    IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                     current));
        continue;
      }
      if (stage.getInt() < current)
        return op->emitError()
               << "stage " << stage.getInt() << " after an op of stage "
               << current << ": stages must not decrease in program order";
      current = stage.getInt();
    }
    if (count > 1 && current + 1 != count)
      return function.emitError()
             << "the hand-written split has " << current + 1
             << " stages, but rtx-split-stages was asked for " << count;
    return success();
  }

  LogicalResult split(func::FuncOp function, int64_t count) {
    int64_t n = computing.size();
    std::vector<int64_t> cuts = {0};
    for (const LayerBoundary &boundary : findLayerBoundaries(computing))
      cuts.push_back(boundary.position);
    cuts.push_back(n);
    int64_t boundaries = cuts.size() - 2;
    if (boundaries < count - 1)
      return function.emitError()
             << "cannot split " << function.getSymName() << " into " << count
             << " pipeline stages: it has " << boundaries
             << " layer boundaries (places where one tensor is live), so at "
                "most "
             << boundaries + 1 << " stages";
    std::vector<int64_t> prefix(n + 1, 0);
    for (int64_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + balanceCost(computing[i]);
    auto segment = [&](int64_t a, int64_t b) {
      return prefix[cuts[b]] - prefix[cuts[a]];
    };
    // best[k][j]: the least maximal stage cost of the ops before cuts[j]
    // in k stages; from[k][j] the cut where the last of them starts.
    int64_t m = cuts.size();
    constexpr int64_t inf = std::numeric_limits<int64_t>::max();
    std::vector<std::vector<int64_t>> best(count + 1,
                                           std::vector<int64_t>(m, inf));
    std::vector<std::vector<int64_t>> from(count + 1,
                                           std::vector<int64_t>(m, -1));
    best[0][0] = 0;
    for (int64_t k = 1; k <= count; ++k)
      for (int64_t j = 1; j < m; ++j)
        for (int64_t i = 0; i < j; ++i) {
          if (best[k - 1][i] == inf)
            continue;
          int64_t worst = std::max(best[k - 1][i], segment(i, j));
          if (worst < best[k][j]) {
            best[k][j] = worst;
            from[k][j] = i;
          }
        }
    std::vector<int64_t> starts(count);
    for (int64_t k = count, j = m - 1; k >= 1; --k) {
      starts[k - 1] = cuts[from[k][j]];
      j = from[k][j];
    }
    Builder b(function.getContext());
    for (int64_t stage = 0; stage < count; ++stage) {
      int64_t end = stage + 1 < count ? starts[stage + 1] : n;
      for (int64_t i = starts[stage]; i < end; ++i)
        computing[i]->setAttr(RTXDialect::getStageAttrName(),
                              b.getI64IntegerAttr(stage));
    }
    return success();
  }

  /// One remark per stage: ops, FLOPs, cost share, parameters, activations.
  void report(func::FuncOp function) {
    struct Totals {
      int64_t ops = 0, flops = 0, cost = 0, activationBytes = 0;
      Operation *first = nullptr;
      llvm::SetVector<Operation *> params;
    };
    std::map<int64_t, Totals> byStage;
    int64_t total = 0;
    for (Operation *op : computing) {
      int64_t stage =
          op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName())
              .getInt();
      Totals &t = byStage[stage];
      if (!t.first)
        t.first = op;
      t.ops += 1;
      if (auto cost = dyn_cast<CostOpInterface>(op))
        t.flops += cost.getFlops();
      t.cost += balanceCost(op);
      total += balanceCost(op);
      for (Value result : op->getResults())
        t.activationBytes += tensorBytes(result.getType());
      for (Value operand : op->getOperands())
        if (auto param = operand.getDefiningOp<ParamOp>())
          t.params.insert(param);
    }
    for (auto &[stage, t] : byStage) {
      int64_t paramBytes = 0;
      for (Operation *param : t.params)
        paramBytes += tensorBytes(param->getResult(0).getType());
      t.first->emitRemark() << llvm::formatv(
          "stage {0}: {1} ops, {2} FLOPs, {3:f1}% of the cost, {4} "
          "parameters ({5} bytes), {6} bytes of activations",
          stage, t.ops, t.flops, 100.0 * double(t.cost) / double(total),
          t.params.size(), paramBytes, t.activationBytes);
    }
  }

  SmallVector<Operation *> computing;
};
} // namespace
