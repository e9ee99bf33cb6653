//===- OptimizeForGpu.cpp - the rtx-optimize-for-gpu pipeline -------------===//
//
// A train step (after rtx-optimizer, or rtx-distribute's partitioned one)
// -> the same step with the fusions the GPU runtime has fast kernels for.
// Each pass is documented and tested on its own (docs/passes.md); this is
// their order, last before rtx-translate --emit=cuda (docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "rtx/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::rtx;

void mlir::rtx::buildOptimizeForGpuPipeline(OpPassManager &pm) {
  OpPassManager &step = pm.nest<func::FuncOp>();
  // The loss and its gradient first: the logits' producer is then a plain
  // matmul/linear, which the epilogue fusion below leaves alone.
  step.addPass(createRTXFuseCrossEntropy());
  step.addPass(createRTXFuseResidualNorm());
  step.addPass(createRTXFuseEpilogues());
  // Last: the updates, once every gradient's producer is final.
  step.addPass(createRTXFuseAdamW());
}

void mlir::rtx::registerOptimizeForGpuPipeline() {
  PassPipelineRegistration<>(
      "rtx-optimize-for-gpu",
      "A train step's fusions for the GPU runtime's fast kernels: "
      "rtx-fuse-cross-entropy, rtx-fuse-residual-norm, rtx-fuse-epilogues, "
      "rtx-fuse-adamw (run last, before rtx-translate --emit=cuda)",
      buildOptimizeForGpuPipeline);
}
