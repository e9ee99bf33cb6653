//===- ApplyPlan.cpp - rtx-distribute from the planner's choice -----------===//
//
// `rtx-distribute=from-plan=true` reads the `rtx.plan` attribute that
// rtx-auto-partition wrote and runs rtx-distribute with the options it
// names (mesh, ZeRO stage, micro-batches, schedule, recompute, ...), plus
// the options the user gave that the plan does not choose (the optimizer
// and its hyper-parameters, bucketing). A user option that the plan also
// chooses is refused rather than silently overridden. The pipeline is
// built when the module is seen, so it is a dynamic pipeline (runPipeline).
//
//===----------------------------------------------------------------------===//

#include "rtx/Pipelines/Pipelines.h"

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct ApplyPlanPass
    : public PassWrapper<ApplyPlanPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApplyPlanPass)

  ApplyPlanPass(std::string userOptions, std::string chosenByUser)
      : userOptions(std::move(userOptions)),
        chosenByUser(std::move(chosenByUser)) {}

  StringRef getArgument() const final { return "rtx-apply-plan"; }
  StringRef getDescription() const final {
    return "rtx-distribute with the options of the module's rtx.plan";
  }
  /// Every dialect any rtx-distribute pipeline may create: the pipeline is
  /// only known when the module is seen, but the dialects must be loaded
  /// before the pass runs (a dynamic pipeline cannot load them).
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<RTXDialect, func::FuncDialect>();
    std::unique_ptr<DistributeOptions> every = DistributeOptions::createFromString(
        "mesh=pp:2,dp:2,tp:2 vocab-parallel=true recompute=full "
        "micro-batches=2 shard-state=3 overlap=true");
    OpPassManager pm(ModuleOp::getOperationName());
    buildDistributePipeline(pm, *every);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<DictionaryAttr>(
        RTXDialect::getPlanAttrName());
    if (!plan) {
      module.emitError() << "rtx-distribute: from-plan=true needs the module's "
                            "'rtx.plan' (run rtx-auto-partition first)";
      return signalPassFailure();
    }
    if (!chosenByUser.empty()) {
      module.emitError() << "rtx-distribute: from-plan=true takes "
                         << chosenByUser
                         << " from the plan; remove the option, or fix it in "
                            "rtx-auto-partition";
      return signalPassFailure();
    }
    auto applicable = plan.getAs<BoolAttr>("applicable");
    if (applicable && !applicable.getValue()) {
      module.emitError() << "rtx-distribute: the plan is a report only: it "
                            "needs the model written for another micro-batch "
                            "size (rtx-auto-partition vary-micro-batch=true)";
      return signalPassFailure();
    }
    std::string text = (plan.getAs<StringAttr>("distribute").getValue() +
                        " " + userOptions)
                           .str();
    std::unique_ptr<DistributeOptions> options =
        DistributeOptions::createFromString(text);
    if (!options) {
      module.emitError() << "rtx-distribute: the plan's options '" << text
                         << "' do not parse";
      return signalPassFailure();
    }
    OpPassManager pm(ModuleOp::getOperationName());
    buildDistributePipeline(pm, *options);
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
  }

  std::string userOptions, chosenByUser;
};
} // namespace

std::unique_ptr<Pass> mlir::rtx::createApplyPlanPass(std::string userOptions,
                                                     std::string chosen) {
  return std::make_unique<ApplyPlanPass>(std::move(userOptions),
                                         std::move(chosen));
}
