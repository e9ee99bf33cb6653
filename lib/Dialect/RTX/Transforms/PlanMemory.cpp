//===- PlanMemory.cpp - the rtx-plan-memory pass --------------------------===//
//
// Reports each step function's static peak memory per rank, by kind
// (rtx/Analysis/MemoryPlan.h). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "rtx/Analysis/MemoryPlan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPLANMEMORY
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXPlanMemoryPass
    : mlir::rtx::impl::RTXPlanMemoryBase<RTXPlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> mesh = getProgramMesh(module);
    if (failed(mesh))
      return signalPassFailure();
    llvm::json::Array functions;
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      FailureOr<ProgramDescription> program = describeProgram(function, *mesh);
      if (failed(program))
        return signalPassFailure();
      MemoryPlan plan = planMemory(*program);
      function.emitRemark()
          << "peak memory per rank of '" << function.getSymName()
          << "': " << plan.peakBytes << " bytes (" << plan.argumentBytes
          << " held by the arguments), reached at "
          << (plan.peakOp ? plan.peakOp->getName().getStringRef()
                          : StringRef("the step's start"))
          << "\n"
          << formatMemoryPlan(plan);
      llvm::json::Object byKind;
      for (int64_t k = 0; k < kMemoryKinds; ++k)
        byKind[memoryKindName(static_cast<MemoryKind>(k))] = plan.peakByKind[k];
      functions.push_back(llvm::json::Object{
          {"name", function.getSymName()},
          {"peak_bytes", plan.peakBytes},
          {"argument_bytes", plan.argumentBytes},
          {"peak_op", plan.peakOp ? plan.peakOp->getName().getStringRef().str()
                                  : std::string()},
          {"by_kind", std::move(byKind)}});
    }
    if (reportFile.empty())
      return;
    std::error_code error;
    llvm::raw_fd_ostream out(reportFile, error, llvm::sys::fs::OF_Text);
    if (error) {
      module.emitError() << "rtx-plan-memory: cannot write report-file '"
                         << reportFile << "': " << error.message();
      return signalPassFailure();
    }
    out << llvm::formatv("{0:2}\n", llvm::json::Value(llvm::json::Object{
                                        {"functions", std::move(functions)}}));
  }
};
} // namespace
