//===- RTXDialect.td - the rtx dialect ---------------------*- tablegen -*-===//
//
// The `rtx` dialect: model ops on ranked tensors, named device meshes, value
// shardings and collectives over mesh axes.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXDIALECT_TD
#define RTX_DIALECT_RTX_IR_RTXDIALECT_TD

include "mlir/IR/OpBase.td"

def RTX_Dialect : Dialect {
  let name = "rtx";
  let cppNamespace = "::mlir::rtx";
  let summary = "Distributed deep-learning training: model ops, meshes, shardings, collectives";
  let description = [{
    The `rtx` dialect expresses a training program twice: first as a global
    (logical) program whose types are the model's full shapes, then, after
    `rtx-partition`, as a local per-rank SPMD program.

    * **Model ops** (`rtx.matmul`, `rtx.attention`, `rtx.layernorm`, ...) work on
      ranked tensors of f32, bf16, f16 (and integer tensors for indices).
      Broadcasting is always explicit (`rtx.broadcast`), so every elementwise op
      has operands of one shape. Every rtx op refuses a tensor type whose
      element count or size in bytes overflows int64
      (`tensor<4294967296x4294967296xf32>`), as the runtime refuses to
      allocate one.
    * **Meshes** (`rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]`) are symbols with named
      axes.
    * **Shardings** (`#rtx.sharding<@mesh_dp2_tp4, [["dp"], []], partial = ["tp"]>`)
      say, for every tensor dimension, which mesh axes split it and which axes
      hold partial sums. They are attached as the `rtx.sharding` attribute to
      ops (one per result) and to function arguments and results, and are
      verified against the mesh.
    * **Collectives** (`rtx.all_reduce`, `rtx.all_gather`, ...) run over mesh axes,
      each with a synchronous form and an async `*_start` form that returns a
      `!rtx.token` consumed by `rtx.wait`.

    Every model op implements `ShardingRuleOpInterface` (an einsum-like mapping
    of operand and result dimensions to factors) and `CostOpInterface` (FLOPs
    and bytes as functions of shapes), so later passes are table-driven.
  }];

  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;

  let extraClassDeclaration = [{
    /// The discardable attribute that holds a value's sharding: on an op, a
    /// `#rtx.sharding` (one result) or an array of them (one per result); on a
    /// function argument or result, a `#rtx.sharding`.
    static constexpr ::llvm::StringLiteral getShardingAttrName() {
      return "rtx.sharding";
    }

    // The training-step passes mark function arguments and results:
    /// On a parameter argument: the parameter's name (a string).
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return "rtx.param";
    }
    /// On a parameter argument: its initializer (a `#rtx.init`).
    static constexpr ::llvm::StringLiteral getInitAttrName() {
      return "rtx.init";
    }
    /// On a parameter argument: the seed of its initializer (an integer).
    static constexpr ::llvm::StringLiteral getSeedAttrName() {
      return "rtx.seed";
    }
    /// On an `rtx.param` op and a parameter argument: the parameter is a
    /// block of a user's tensor, `{name = "c_attn.weight", dim = 1 : i64,
    /// offset = 768 : i64}`: the block [offset, offset + its size along dim)
    /// of dimension dim of the user's tensor `name`, every other dimension
    /// whole. Loading parameters in the user's names reads that block;
    /// giving them back reassembles the user's tensor (docs/python.md,
    /// "Weights in and out"). rtx-split-fused-projections adds `size`, the
    /// size of that dimension in the user's tensor: initial values are
    /// drawn as the user's tensor's block.
    static constexpr ::llvm::StringLiteral getPartOfAttrName() {
      return "rtx.part_of";
    }
    /// On an argument and a result: the key that links a piece of state
    /// before and after a step (`param:NAME`, `exp_avg:NAME`, `step`, ...);
    /// after each step the result becomes the argument with the same key.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return "rtx.state";
    }
    /// On a gradient result: the name of the parameter it belongs to.
    static constexpr ::llvm::StringLiteral getGradOfAttrName() {
      return "rtx.grad_of";
    }
    // On ops:
    /// On a module: "global" (logical shapes) or "local" (per-rank shapes,
    /// after rtx-partition).
    static constexpr ::llvm::StringLiteral getPhaseAttrName() {
      return "rtx.phase";
    }
    /// A unit attribute on a function that rtx-optimizer made into a whole
    /// training step.
    static constexpr ::llvm::StringLiteral getTrainStepAttrName() {
      return "rtx.train_step";
    }
    /// On an op: where rtx-propagate-sharding took its sharding from (a
    /// string; debug-origin).
    static constexpr ::llvm::StringLiteral getShardingOriginAttrName() {
      return "rtx.sharding_origin";
    }
    /// On an op: the pipeline stage that runs it (a non-negative integer;
    /// rtx-split-stages, or by hand).
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return "rtx.stage";
    }
    /// A unit attribute on an op that rtx-autodiff built for the backward
    /// pass of an op with a stage (rtx-pipeline tells forward from backward
    /// by it).
    static constexpr ::llvm::StringLiteral getBackwardAttrName() {
      return "rtx.backward";
    }
    /// On a function that rtx-pipeline made: the coordinate of the pipeline
    /// axis whose ranks run it (an integer).
    static constexpr ::llvm::StringLiteral getPipelineRankAttrName() {
      return "rtx.pipeline_rank";
    }
    /// On an op of such a function: the schedule's action it belongs to
    /// ("1F3"; traces show each action as a span).
    static constexpr ::llvm::StringLiteral getActionAttrName() {
      return "rtx.action";
    }
    /// On a module: the plan rtx-auto-partition chose (a dictionary: the
    /// degrees, ZeRO stage, micro-batches, schedule, recompute, the
    /// prediction, and the rtx-distribute options that realise it).
    static constexpr ::llvm::StringLiteral getPlanAttrName() {
      return "rtx.plan";
    }
    /// On such a function: the name of the pipeline's mesh axis.
    static constexpr ::llvm::StringLiteral getPipelineAxisAttrName() {
      return "rtx.pipeline_axis";
    }
    /// On a result of such a function: its index among the results of the
    /// step it was made from (an integer).
    static constexpr ::llvm::StringLiteral getStepResultAttrName() {
      return "rtx.step_result";
    }
    /// On an argument or result that rtx-shard-state made: a flat buffer,
    /// this rank's shard of several tensors (its members) flattened,
    /// concatenated and padded to a multiple of the shard axis: a dictionary
    /// with `axis`, `length` and `members`, one dictionary per member with
    /// name, state, kind, offset, type, sharding, init, seed and result
    /// (docs/fsdp.md).
    static constexpr ::llvm::StringLiteral getFlatAttrName() {
      return "rtx.flat";
    }
    /// On an argument and a result that rtx-shard-state{offload=...} made:
    /// the flat buffer lives in an offload tier between steps, "cpu" (host
    /// memory) or "nvme" (a file in the run's offload directory); the step
    /// reads it with rtx.offload_fetch_start and writes it back with
    /// rtx.offload_store (docs/fsdp.md).
    static constexpr ::llvm::StringLiteral getOffloadAttrName() {
      return "rtx.offload";
    }
    /// A unit attribute on the op that rtx-optimizer computes the global
    /// gradient norm with (rtx-shard-state recomputes it from shards).
    static constexpr ::llvm::StringLiteral getGradNormAttrName() {
      return "rtx.grad_norm";
    }

  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

#endif // RTX_DIALECT_RTX_IR_RTXDIALECT_TD
