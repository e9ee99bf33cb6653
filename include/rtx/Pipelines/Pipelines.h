//===- Pipelines.h - rtx's registered pass pipelines ------------*- C++ -*-===//
//
// rtx-distribute: from a forward model to a partitioned, verified train
// step, as a pipeline of the passes in Passes.td. docs/passes.md describes
// it; each pass it runs is documented and tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_PIPELINES_PIPELINES_H
#define RTX_PIPELINES_PIPELINES_H

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::rtx {

/// The options of rtx-distribute, in the spelling users know
/// (`-rtx-distribute=mesh=dp:2,tp:2 optimizer=sgd lr=0.1`). Each forwards to
/// one pass' generated options struct, whose defaults it takes; only `mesh`,
/// `bucket-bytes` (-1: no bucketing) and `overlap` choose passes.
struct DistributeOptions : public PassPipelineOptions<DistributeOptions> {
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("Mesh axes and sizes, e.g. dp:2,tp:2 "
                                          "(rtx-add-mesh)"),
                           llvm::cl::init(RTXAddMeshOptions{}.mesh)};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("Optimizer: sgd or adamw (rtx-optimizer's kind)"),
      llvm::cl::init(RTXOptimizerOptions{}.kind)};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(RTXOptimizerOptions{}.lr)};
  Option<double> beta1{*this, "beta1",
                       llvm::cl::desc("AdamW first-moment decay"),
                       llvm::cl::init(RTXOptimizerOptions{}.beta1)};
  Option<double> beta2{*this, "beta2",
                       llvm::cl::desc("AdamW second-moment decay"),
                       llvm::cl::init(RTXOptimizerOptions{}.beta2)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW denominator epsilon"),
                     llvm::cl::init(RTXOptimizerOptions{}.eps)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Decoupled weight decay (AdamW) or L2 penalty (SGD)"),
      llvm::cl::init(RTXOptimizerOptions{}.weightDecay)};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Clip gradients to this global L2 norm (0: no clipping)"),
      llvm::cl::init(RTXOptimizerOptions{}.clipNorm)};
  Option<int64_t> warmupSteps{
      *this, "warmup-steps",
      llvm::cl::desc("AdamW: steps of linear learning-rate warm-up (0: none)"),
      llvm::cl::init(RTXOptimizerOptions{}.warmupSteps)};
  Option<int64_t> decaySteps{
      *this, "decay-steps",
      llvm::cl::desc("AdamW: the step at which the cosine decay reaches "
                     "min-lr (0: no decay)"),
      llvm::cl::init(RTXOptimizerOptions{}.decaySteps)};
  Option<double> minLr{
      *this, "min-lr",
      llvm::cl::desc("AdamW: the learning rate from decay-steps on"),
      llvm::cl::init(RTXOptimizerOptions{}.minLr)};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Gradient accumulation: micro-batches per step "
                     "(rtx-accumulate-gradients when not 1; below 1: error)"),
      llvm::cl::init(RTXAccumulateGradientsOptions{}.microBatches)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Megatron sequence parallelism on the tp axis"),
      llvm::cl::init(RTXSeedShardingsOptions{}.sequenceParallel)};
  Option<bool> vocabParallel{
      *this, "vocab-parallel",
      llvm::cl::desc("Split a language model's vocabulary over tp "
                     "(embedding table, output projection, loss), padded by "
                     "rtx-pad-vocabulary where tp does not divide it"),
      llvm::cl::init(RTXSeedShardingsOptions{}.vocabParallel)};
  Option<bool> strictTP{
      *this, "strict-tp",
      llvm::cl::desc("Refuse a program in which a linear or matmul over a "
                     "parameter stays whole on the tp axis "
                     "(rtx-seed-shardings)"),
      llvm::cl::init(false)};
  ListOption<std::string> seedHints{
      *this, "seed-hints",
      llvm::cl::desc("Tensor-parallel roles by parameter-name suffix, "
                     "NAME:column or NAME:row (rtx-seed-shardings)")};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Fuse gradient all-reduces into buckets of at most this "
                     "many bytes (rtx-bucket-collectives; 25 MiB, PyTorch "
                     "DDP's default; -1: one all-reduce per gradient)"),
      llvm::cl::init(kDefaultGradientBucketBytes)};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("Overlap the all-reduces with the compute after them "
                     "(rtx-schedule-overlap)"),
      llvm::cl::init(false)};

  Option<std::string> pipelineSchedule{
      *this, "pipeline-schedule",
      llvm::cl::desc("With a pp axis: gpipe, 1f1b, interleaved or zb-h1 "
                     "(rtx-pipeline's schedule)"),
      llvm::cl::init(RTXPipelineOptions{}.schedule)};
  Option<std::string> pipelineScheduleFile{
      *this, "pipeline-schedule-file",
      llvm::cl::desc("With a pp axis: a schedule in rtx-schedule's text form "
                     "(rtx-pipeline's schedule-file)"),
      llvm::cl::init(RTXPipelineOptions{}.scheduleFile)};
  Option<int64_t> pipelineMicroBatches{
      *this, "pipeline-micro-batches",
      llvm::cl::desc("With a pp axis: micro-batches per step; the model is "
                     "written for one, the step takes that many times its "
                     "batch (0: one per pipeline rank)"),
      llvm::cl::init(RTXPipelineOptions{}.microBatches)};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("With a pp axis: stages per pipeline rank (interleaved "
                     "schedules)"),
      llvm::cl::init(RTXPipelineOptions{}.virtualStages)};

  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("Activation recompute: none, full or selective "
                     "(rtx-recompute's policy)"),
      llvm::cl::init(RTXRecomputeOptions{}.policy)};

  Option<int64_t> shardState{
      *this, "shard-state",
      llvm::cl::desc("ZeRO stage over dp: 0 (none), 1, 2 or 3 "
                     "(rtx-shard-state)"),
      llvm::cl::init(0)};
  Option<std::string> shardUnit{
      *this, "shard-unit",
      llvm::cl::desc("With shard-state: units of flat buffers, block, param, "
                     "all, size or prefix (rtx-shard-state)"),
      llvm::cl::init(RTXShardStateOptions{}.unit)};
  Option<int64_t> shardMinUnitParams{
      *this, "shard-min-unit-params",
      llvm::cl::desc("With shard-unit=size: the parameter elements that make "
                     "a name prefix a unit (rtx-shard-state min-unit-params)"),
      llvm::cl::init(0)};
  ListOption<std::string> shardUnitPrefixes{
      *this, "shard-unit-prefixes",
      llvm::cl::desc("With shard-unit=prefix: the name prefixes that are "
                     "units (rtx-shard-state unit-prefixes)")};
  Option<bool> reshardAfterForward{
      *this, "reshard-after-forward",
      llvm::cl::desc("With shard-state=3: gather parameters again for the "
                     "backward pass"),
      llvm::cl::init(RTXShardStateOptions{}.reshardAfterForward)};
  Option<std::string> reduceDtype{
      *this, "reduce-dtype",
      llvm::cl::desc("With shard-state >= 2: element type of the gradient "
                     "reduce-scatter (f32, bf16, f16)"),
      llvm::cl::init(RTXShardStateOptions{}.reduceDtype)};
  Option<std::string> offload{
      *this, "offload",
      llvm::cl::desc("With shard-state: where optimizer state (and stage 3's "
                     "parameter shards) live between steps: none, cpu or nvme "
                     "(rtx-shard-state)"),
      llvm::cl::init(RTXShardStateOptions{}.offload)};

  Option<bool> fromPlan{
      *this, "from-plan",
      llvm::cl::desc("Take the mesh, ZeRO stage, micro-batches, schedule, "
                     "recompute and overlap from the module's rtx.plan "
                     "(rtx-auto-partition); the other options still apply"),
      llvm::cl::init(false)};

  RTXAddMeshOptions addMeshOptions() const;
  /// The size of the mesh's pp axis (1 without one).
  int64_t pipelineRanks() const;
  /// The size of mesh axis `name` (1 when the mesh has none).
  int64_t axisSize(llvm::StringRef name) const;
  RTXOptimizerOptions optimizerOptions() const;
  RTXSeedShardingsOptions seedShardingsOptions() const;
};

/// The pass behind from-plan=true: runs rtx-distribute with the plan's
/// options and `userOptions`; fails naming `chosenByUser` when the user set
/// options the plan chooses.
std::unique_ptr<Pass> createApplyPlanPass(std::string userOptions,
                                          std::string chosenByUser);

/// Adds rtx-distribute's passes to `pm` (a module pass manager).
void buildDistributePipeline(OpPassManager &pm,
                             const DistributeOptions &options);

/// Adds rtx-optimize-for-gpu's fusions to `pm` (a module pass manager): a
/// train step's ops fused where the GPU runtime has fast kernels for them.
void buildOptimizeForGpuPipeline(OpPassManager &pm);
void registerOptimizeForGpuPipeline();

/// Registers rtx-distribute and rtx-optimize-for-gpu with the pass registry
/// (rtx-opt).
void registerRTXPipelines();

} // namespace mlir::rtx

#endif // RTX_PIPELINES_PIPELINES_H
