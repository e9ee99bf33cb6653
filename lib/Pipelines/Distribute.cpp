//===- Distribute.cpp - the rtx-distribute pipeline -----------------------===//
//
// Forward model -> partitioned, verified train step: rtx's passes in order,
// each documented and tested on its own. See docs/passes.md.
//
//===----------------------------------------------------------------------===//

#include "rtx/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::rtx;

RTXAddMeshOptions DistributeOptions::addMeshOptions() const {
  RTXAddMeshOptions o;
  o.mesh = mesh;
  return o;
}

RTXOptimizerOptions DistributeOptions::optimizerOptions() const {
  RTXOptimizerOptions o;
  o.kind = optimizer;
  o.lr = lr;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  o.weightDecay = weightDecay;
  o.clipNorm = clipNorm;
  return o;
}

RTXSeedShardingsOptions DistributeOptions::seedShardingsOptions() const {
  RTXSeedShardingsOptions o;
  o.vocabParallel = vocabParallel;
  o.sequenceParallel = sequenceParallel;
  o.seedHints.assign(seedHints.begin(), seedHints.end());
  return o;
}

void mlir::rtx::buildDistributePipeline(OpPassManager &pm,
                                        const DistributeOptions &options) {
  pm.addPass(createRTXAddMesh(options.addMeshOptions()));
  // Padding changes the forward program, so it comes before autodiff.
  if (options.vocabParallel)
    pm.addPass(createRTXPadVocabulary());
  OpPassManager &training = pm.nest<func::FuncOp>();
  training.addPass(createRTXAutodiff());
  // Not only when > 1: rtx-accumulate-gradients refuses 0 and negative
  // counts, which would otherwise pass as "no accumulation".
  if (options.microBatches != 1)
    training.addPass(createRTXAccumulateGradients(
        RTXAccumulateGradientsOptions{options.microBatches}));
  pm.addPass(createRTXOptimizer(options.optimizerOptions()));
  pm.addPass(createRTXSeedShardings(options.seedShardingsOptions()));
  pm.addPass(createRTXPropagateSharding());
  pm.addPass(createRTXPartition());
  pm.addPass(createRTXVerifyDistribution());
  if (options.bucketBytes < 0 && !options.overlap)
    return;
  OpPassManager &collectives = pm.nest<func::FuncOp>();
  if (options.bucketBytes >= 0)
    collectives.addPass(createRTXBucketCollectives(
        RTXBucketCollectivesOptions{options.bucketBytes}));
  if (options.overlap)
    collectives.addPass(createRTXScheduleOverlap());
}

void mlir::rtx::registerRTXPipelines() {
  PassPipelineRegistration<DistributeOptions>(
      "rtx-distribute",
      "From a forward model to a partitioned, verified train step: "
      "rtx-add-mesh, rtx-pad-vocabulary, rtx-autodiff, "
      "rtx-accumulate-gradients, rtx-optimizer, rtx-seed-shardings, "
      "rtx-propagate-sharding, rtx-partition, rtx-verify-distribution, "
      "rtx-bucket-collectives, rtx-schedule-overlap",
      buildDistributePipeline);
}
