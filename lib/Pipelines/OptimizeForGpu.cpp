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
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::rtx;

void mlir::rtx::buildOptimizeForGpuPipeline(OpPassManager &pm) {
  OpPassManager &step = pm.nest<func::FuncOp>();
  // Folds the bf16 -> f32 -> bf16 round trips of mixed precision's f32
  // gradient accumulation (rtx.convert's folder), which would otherwise sit
  // between a GEMM and the GELU gradient its epilogue can compute.
  step.addPass(createCanonicalizerPass());
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
      "canonicalize, rtx-fuse-cross-entropy, rtx-fuse-residual-norm, "
      "rtx-fuse-epilogues, "
      "rtx-fuse-adamw (run last, before rtx-translate --emit=cuda)",
      buildOptimizeForGpuPipeline);
}
