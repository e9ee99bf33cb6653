//===- TestOpInterfaces.cpp - print op interface results as remarks -------===//
//
// `-rtx-test-op-interfaces` attaches a remark to every op that implements the
// sharding-rule or cost interface, so lit tests can check the rules and costs
// of real IR.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/CostModel.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct TestOpInterfacesPass
    : public PassWrapper<TestOpInterfacesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestOpInterfacesPass)

  StringRef getArgument() const final { return "rtx-test-op-interfaces"; }
  StringRef getDescription() const final {
    return "Report each rtx op's sharding rule and cost as remarks (testing)";
  }

  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      auto rule = dyn_cast<ShardingRuleOpInterface>(op);
      auto cost = dyn_cast<CostOpInterface>(op);
      if (!rule && !cost)
        return;
      InFlightDiagnostic remark = op->emitRemark();
      if (rule)
        remark << "rule: " << rule.getShardingRule().str();
      if (cost)
        remark << (rule ? "; " : "") << "flops: " << cost.getFlops()
               << "; bytes: " << cost.getBytesAccessed();
    });
  }
};

/// `-rtx-test-cost-model`: the program cost model (rtx/Analysis) of every
/// function, as a remark on it.
struct TestCostModelPass
    : public PassWrapper<TestCostModelPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCostModelPass)

  StringRef getArgument() const final { return "rtx-test-cost-model"; }
  StringRef getDescription() const final {
    return "Report each function's program cost as a remark (testing)";
  }

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      ProgramCost cost = analyzeProgramCost(function);
      auto remark = function.emitRemark();
      remark << "flops: " << cost.flops << "; bytes: " << cost.bytes;
      for (const auto &[op, flops] : cost.flopsByOp)
        if (flops)
          remark << "; " << op << ": " << flops;
      for (const auto &[axes, bytes] : cost.collectiveBytes)
        remark << "; collectives over " << axes << ": "
               << cost.collectiveCount[axes] << " moving " << bytes
               << " bytes";
    }
  }
};
} // namespace

namespace rtx::test {
void registerTestPasses() {
  PassRegistration<TestOpInterfacesPass>();
  PassRegistration<TestCostModelPass>();
}
} // namespace rtx::test
