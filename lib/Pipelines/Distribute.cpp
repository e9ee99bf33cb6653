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
  o.warmupSteps = warmupSteps;
  o.decaySteps = decaySteps;
  o.minLr = minLr;
  return o;
}

RTXSeedShardingsOptions DistributeOptions::seedShardingsOptions() const {
  RTXSeedShardingsOptions o;
  o.vocabParallel = vocabParallel;
  o.sequenceParallel = sequenceParallel;
  o.seedHints.assign(seedHints.begin(), seedHints.end());
  o.strictTP = strictTP;
  return o;
}

int64_t DistributeOptions::axisSize(StringRef axisName) const {
  SmallVector<StringRef> axes;
  StringRef(mesh).split(axes, ',');
  for (StringRef axis : axes) {
    auto [name, size] = axis.split(':');
    int64_t n = 1;
    if (name.trim() == axisName && !size.trim().getAsInteger(10, n))
      return n;
  }
  return 1;
}

int64_t DistributeOptions::pipelineRanks() const { return axisSize("pp"); }

/// The options a plan does not choose, as text for the plan's pipeline, and
/// the names of those it chooses that the user set anyway.
static void splitForPlan(const DistributeOptions &options,
                         std::string &userOptions, std::string &chosen) {
  const llvm::cl::Option *planChooses[] = {
      &options.mesh,          &options.microBatches,
      &options.sequenceParallel, &options.vocabParallel,
      &options.pipelineSchedule, &options.pipelineScheduleFile,
      &options.pipelineMicroBatches, &options.virtualStages,
      &options.recompute,     &options.shardState,
      &options.overlap,       &options.fromPlan};
  for (const llvm::cl::Option *opt : planChooses)
    if (opt != &options.fromPlan && opt->getNumOccurrences() > 0)
      chosen += (chosen.empty() ? "" : ", ") + opt->ArgStr.str();
  // print() writes "{a=1 b=2 ...}"; keep the options the plan leaves alone.
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  StringRef body = StringRef(text).trim();
  if (body.consume_front("{"))
    body.consume_back("}");
  SmallVector<StringRef> parts;
  body.split(parts, ' ', -1, false);
  for (StringRef part : parts) {
    StringRef key = part.split('=').first;
    bool planned = llvm::any_of(planChooses, [&](const llvm::cl::Option *o) {
      return o->ArgStr == key;
    });
    if (!planned)
      userOptions += part.str() + " ";
  }
}

void mlir::rtx::buildDistributePipeline(OpPassManager &pm,
                                        const DistributeOptions &options) {
  if (options.fromPlan) {
    std::string userOptions, chosen;
    splitForPlan(options, userOptions, chosen);
    pm.addPass(createApplyPlanPass(userOptions, chosen));
    return;
  }
  pm.addPass(createRTXAddMesh(options.addMeshOptions()));
  // Padding changes the forward program, so it comes before autodiff.
  if (options.vocabParallel)
    pm.addPass(createRTXPadVocabulary());
  // Fused q | k | v projections become one per part, which tp splits by
  // head without a gather; key/value heads tp does not divide are repeated
  // to the query heads.
  if (options.axisSize("tp") > 1) {
    pm.addPass(createRTXSplitFusedProjections());
    pm.addPass(createRTXRepeatKVHeads());
  }
  int64_t pp = options.pipelineRanks();
  OpPassManager &training = pm.nest<func::FuncOp>();
  // Stages are given to the forward model; autodiff hands them on to the
  // backward ops.
  if (pp > 1)
    training.addPass(createRTXSplitStages(
        RTXSplitStagesOptions{pp * options.virtualStages}));
  training.addPass(createRTXAutodiff());
  // Not only when set: rtx-recompute refuses an unknown policy.
  if (options.recompute != RTXRecomputeOptions{}.policy)
    training.addPass(createRTXRecompute(
        RTXRecomputeOptions{options.recompute, /*remarks=*/false}));
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
  // Pipeline options without a pp axis reach rtx-pipeline, which refuses a
  // program without stages, rather than being ignored.
  RTXPipelineOptions defaults;
  bool pipelineOptions =
      options.pipelineSchedule != defaults.schedule ||
      options.pipelineScheduleFile != defaults.scheduleFile ||
      options.pipelineMicroBatches != defaults.microBatches ||
      options.virtualStages != defaults.virtualStages;
  if (pp > 1 || pipelineOptions) {
    RTXPipelineOptions pipeline;
    pipeline.schedule = options.pipelineSchedule;
    pipeline.scheduleFile = options.pipelineScheduleFile;
    pipeline.microBatches = options.pipelineMicroBatches;
    pipeline.virtualStages = options.virtualStages;
    pm.addPass(createRTXPipeline(pipeline));
  }
  // Sharding options without shard-state reach rtx-shard-state's checks
  // rather than being ignored.
  RTXShardStateOptions shardDefaults;
  if (options.shardState != 0 || options.shardUnit != shardDefaults.unit ||
      options.reshardAfterForward != shardDefaults.reshardAfterForward ||
      options.reduceDtype != shardDefaults.reduceDtype ||
      options.offload != shardDefaults.offload ||
      options.shardMinUnitParams != 0 || !options.shardUnitPrefixes.empty()) {
    RTXShardStateOptions shard;
    shard.stage = options.shardState;
    shard.unit = options.shardUnit;
    shard.reshardAfterForward = options.reshardAfterForward;
    shard.reduceDtype = options.reduceDtype;
    shard.offload = options.offload;
    shard.minUnitParams = options.shardMinUnitParams;
    shard.unitPrefixes.assign(options.shardUnitPrefixes.begin(),
                              options.shardUnitPrefixes.end());
    pm.addPass(createRTXShardState(shard));
  }
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
      "rtx-add-mesh, rtx-pad-vocabulary, rtx-autodiff, rtx-recompute, "
      "rtx-accumulate-gradients, rtx-optimizer, rtx-seed-shardings, "
      "rtx-propagate-sharding, rtx-partition, rtx-verify-distribution, "
      "rtx-pipeline (with a pp axis, rtx-split-stages before autodiff), "
      "rtx-shard-state (with shard-state), rtx-bucket-collectives, "
      "rtx-schedule-overlap",
      buildDistributePipeline);
  registerOptimizeForGpuPipeline();
}
