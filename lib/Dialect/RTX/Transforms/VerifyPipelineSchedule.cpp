//===- VerifyPipelineSchedule.cpp - the rtx-verify-pipeline-schedule pass -===//
//
// Reads a function's rtx.pipeline_schedule and reports what the simulator
// finds wrong with it, at the function. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "rtx/Analysis/PipelineSchedule.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXVERIFYPIPELINESCHEDULE
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXVerifyPipelineSchedulePass
    : mlir::rtx::impl::RTXVerifyPipelineScheduleBase<
          RTXVerifyPipelineSchedulePass> {
  using RTXVerifyPipelineScheduleBase::RTXVerifyPipelineScheduleBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    // The dialect's verifier has checked the attributes' shapes.
    auto ranks = function->getAttrOfType<ArrayAttr>("rtx.pipeline_schedule");
    if (!ranks)
      return;
    std::string text;
    for (Attribute rank : ranks)
      text += cast<StringAttr>(rank).getValue().str() + "\n";
    int64_t virtualStages = 1;
    if (auto v = function->getAttrOfType<IntegerAttr>("rtx.virtual_stages"))
      virtualStages = v.getInt();
    pipeline::ParseResult parsed = pipeline::parseSchedule(text, virtualStages);
    std::vector<pipeline::Diagnostic> errors = parsed.errors;
    if (parsed.schedule)
      errors = pipeline::simulate(*parsed.schedule).errors;
    for (const pipeline::Diagnostic &error : errors)
      function.emitError(error.str());
    if (!errors.empty())
      signalPassFailure();
  }
};
} // namespace
