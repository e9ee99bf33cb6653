//===- Passes.td - rtx passes ------------------------------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_TRANSFORMS_PASSES_TD
#define RTX_DIALECT_RTX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RTXAutodiff : Pass<"rtx-autodiff", "mlir::func::FuncOp"> {
  let summary = "Builds the joint forward + backward function";
  let description = [{
    Differentiates a function whose last result is a scalar loss with respect
    to every `rtx.param` in it. The function then also returns one gradient
    per parameter, in declaration order, each marked with the result attribute
    `rtx.grad_of = "NAME"`; parameters that do not affect the loss get zeros.

    The backward pass is built from each op's `VJPOpInterface`; gradients of
    values used several times are accumulated (in f32 for bf16/f16 values,
    rounded once). Forward values the backward pass needs are used directly:
    saved activations are explicit values, so a later recompute pass can
    choose what to keep. Only ops on a path from a parameter to the loss are
    differentiated. An op on such a path without a VJP is an error that names
    it. Functions whose last result is not a scalar float are left alone.

    Example: `rtx-opt -rtx-autodiff model.mlir` turns

    ```mlir
    func.func @f(%x: tensor<4x3xf32>) -> tensor<f32> {
      %w = rtx.param "w" normal(0.0, 1.0) : tensor<2x3xf32>
      %y = rtx.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
      %l = rtx.reduce mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```

    into a function returning `(tensor<f32>, tensor<2x3xf32> {rtx.grad_of = "w"})`.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXOptimizer : Pass<"rtx-optimizer", "mlir::ModuleOp"> {
  let summary = "Appends the optimizer update: a whole training step";
  let description = [{
    Runs on functions produced by `rtx-autodiff` and turns each into

    ```
    train_step(params..., optimizer state..., batch...) -> (loss, params'..., state'...)
    ```

    Every `rtx.param` becomes a function argument (attributes `rtx.param`,
    `rtx.init`, `rtx.seed`, its sharding); the optimizer state (AdamW moments
    per parameter and a step count) is explicit arguments and results, so
    sharding passes can split it. Arguments and results that carry the same
    `rtx.state` key are one piece of state before and after the step;
    `rtx-run --steps N` feeds each result back into its argument.

    `clip-norm` > 0 scales all gradients by `min(1, clip / (norm + 1e-6))`
    with `norm` their global L2 norm (PyTorch's `clip_grad_norm_`).
    `mixed-precision` keeps f32 master weights as the parameter arguments and
    feeds the model bf16 copies; gradients are accumulated and applied in f32.

    Example: `rtx-opt -rtx-autodiff '-rtx-optimizer=kind=adamw lr=1e-3'`.
  }];
  let options = [
    Option<"kind", "kind", "std::string", "\"adamw\"",
           "Optimizer: sgd or adamw">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW second-moment decay">,
    Option<"eps", "eps", "double", "1e-8", "AdamW denominator epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Decoupled weight decay (AdamW) or L2 penalty (SGD)">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "Clip gradients to this global L2 norm (0: no clipping)">,
    Option<"mixedPrecision", "mixed-precision", "bool", "false",
           "f32 master weights for bf16 parameters">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect", "mlir::func::FuncDialect"];
}

def RTXAccumulateGradients
    : Pass<"rtx-accumulate-gradients", "mlir::func::FuncOp"> {
  let summary = "Gradient accumulation: k micro-batches within one step";
  let description = [{
    Runs after `rtx-autodiff` on a function written for one micro-batch. The
    function then takes `micro-batches` times as large a batch: every batch
    input (function arguments and `rtx.input` values) grows `micro-batches`
    times along dimension 0, and micro-batch j takes its rows j, j+k, j+2k,
    ... (a data-parallel split of the batch then needs no communication); the
    forward and backward computation is replicated per micro-batch (the
    parameters are shared); the loss and every other result are averaged, and
    the gradients are summed and divided by the count, in f32 for 16-bit
    parameters. With equal micro-batches this equals one step on the whole
    batch (exactly so when the loss is a mean over equally many tokens).

    Example: `rtx-opt -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=4'
    -rtx-optimizer`.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Number of micro-batches per step">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXBucketCollectives
    : Pass<"rtx-bucket-collectives", "mlir::func::FuncOp"> {
  let summary = "Fuses all-reduces whose results are used later into buckets";
  let description = [{
    A data-parallel train step all-reduces every gradient separately, and
    each collective pays a fixed cost (a rendezvous of the group, a ring's
    latency) that for a small model outweighs the bytes it moves: a 2-rank
    GPT-2 step spent as long in 53 gradient all-reduces as in its compute.
    This pass fuses consecutive `rtx.all_reduce` ops of one mesh, axes,
    reduction and element type into one, as PyTorch DDP's gradient buckets
    do: each input is reshaped to 1-D, the inputs are concatenated, reduced
    once, split and reshaped back. Walking the all-reduces in order, one
    joins the open bucket while every input of the bucket is defined before
    every use of its results (the fused collective goes right after the last
    input's definition, so an optimizer that updates each parameter right
    after its all-reduce still gets one bucket), and while the bucket stays
    within `bucket-bytes` (0: unlimited). Elementwise reductions commute
    with concatenation, so the results are exactly those of the separate
    collectives. Activation all-reduces of tensor parallelism, whose results
    are used at once, stay alone.

    Example: `rtx-opt '-rtx-distribute=mesh=dp:2' -rtx-bucket-collectives`.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "0",
           "Largest bucket in bytes (0: no limit)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXScheduleOverlap
    : Pass<"rtx-schedule-overlap", "mlir::func::FuncOp"> {
  let summary = "Overlaps all-reduces with the compute that follows them";
  let description = [{
    Turns each `rtx.all_reduce` whose result is not used by the very next op
    into `rtx.all_reduce_start` at the same place and `rtx.wait` right
    before the first use of its result, so the ops in between (the rest of
    the backward pass, for a gradient bucket that rtx-bucket-collectives
    placed early) compute while the collective runs, as PyTorch DDP overlaps
    its buckets with the backward pass. The result is the same value;
    runtimes run started collectives in program order. Only the synchronous
    all-reduce is rewritten.

    Example: `rtx-opt -rtx-bucket-collectives=bucket-bytes=4194304
    -rtx-schedule-overlap`.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXPropagateSharding
    : Pass<"rtx-propagate-sharding", "mlir::ModuleOp"> {
  let summary = "Gives every value a sharding, from seeds, through op rules";
  let description = [{
    Seeds are the `rtx.sharding` attributes present on function arguments
    and op results (written by hand or by a planner). Propagation walks the
    ops forward and backward until nothing changes: for each op, its sharding
    rule (ShardingRuleOpInterface) maps the known shardings of its operands
    and results to factors, and factors back to the tensors that have no
    sharding yet. Conflicts are resolved deterministically: a seed on a
    parameter beats a seed on any other value, which beats a propagated
    sharding; among equals the first operand or result in op order wins, and
    when two factors want the same axis, the one proposed with the higher
    priority keeps it (then the earlier factor). A factor that must stay whole (need-replication) or whose
    size the axes do not divide is not split (the documented rule for
    non-divisible dimensions: such a dimension stays replicated). Values left
    without a sharding are replicated. Every value of a function with a mesh
    ends with an explicit `rtx.sharding`; with `debug-origin`, each
    propagated one also records where it came from (`rtx.sharding_origin`).

    The module must hold exactly one `rtx.mesh`.
  }];
  let options = [
    Option<"debugOrigin", "debug-origin", "bool", "false",
           "Record on each op which value its sharding was propagated from">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXPartition : Pass<"rtx-partition", "mlir::ModuleOp"> {
  let summary = "Rewrites the global program into the per-rank program";
  let description = [{
    After `rtx-propagate-sharding`, replaces every value by its per-rank
    block: types become local shapes (global size divided by the product of
    the axes that split each dimension). Where an op needs an operand in
    another distribution than it has, the cheapest collective is inserted:
    partial sums become `rtx.all_reduce` (or `rtx.reduce_scatter` when the
    target splits a dimension over the same axes), split dimensions that must
    be whole `rtx.all_gather`, an axis moving between dimensions
    `rtx.all_to_all`, and a replicated value that must be split a local
    `rtx.mesh_slice`. Partial sums are kept as long as consumers accept them
    and reduced only where needed. Means over split dimensions (`rtx.reduce
    mean`, `rtx.cross_entropy` and its gradient) are rescaled so that partial
    sums add up to the global mean (exact for equally filled shards).
    Vocabulary splits (Megatron's vocab-parallel embedding and loss): an
    `rtx.embedding` (and its gradient) whose table is split along the
    vocabulary gets `vocab on @mesh [axes]`, each rank looking up only the ids
    its shard owns; an `rtx.cross_entropy` (and its gradient) whose logits
    are split along the vocabulary becomes `rtx.vocab_logit_stats`, an
    all-reduce `max` of the per-token maximum, a local sum of exponentials,
    all-reduces `sum` of it and of the label's logit, and
    `rtx.vocab_cross_entropy` (`rtx.vocab_cross_entropy_grad`, from the same
    statistics): the logits are never gathered. The module is marked
    `rtx.phase = "local"`.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXVerifyDistribution
    : Pass<"rtx-verify-distribution", "mlir::ModuleOp"> {
  let summary = "Statically checks a partitioned program";
  let description = [{
    Proves the invariants of design.md §3 on a program after `rtx-partition`:
    every op's operands and results agree on how each factor of its sharding
    rule is split (the bug class of "loss silently off between layouts"); a
    partial sum never reaches an op other than an addition, a reshape or a
    collective that reduces it; a collective reduces only axes its operand
    holds as partial sums and gathers only axes that split the gathered
    dimension; an op that reads a vocabulary shard (`rtx.embedding`,
    `rtx.embedding_grad` with `vocab on`, the vocab-parallel loss ops) offsets
    ids and labels by exactly the axes that split its vocabulary; and local
    shapes are consistent with the shardings.
    Diagnostics name the value, the dimension and the axis.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXDistribute : Pass<"rtx-distribute", "mlir::ModuleOp"> {
  let summary = "From a forward model to a partitioned, verified train step";
  let description = [{
    One pass for users who do not want to annotate each weight: adds the mesh
    (`mesh=dp:2,tp:2`; axes of size 1 may be given or left out), then runs
    rtx-autodiff, rtx-accumulate-gradients (when `micro-batches` > 1),
    rtx-optimizer, seeds shardings, and runs rtx-propagate-sharding,
    rtx-partition, rtx-verify-distribution and rtx-bucket-collectives (and
    rtx-schedule-overlap with `overlap=true`).

    Default seeding (Megatron style):
    * `dp`: dimension 0 (the batch) of every data input.
    * `sp` (sequence parallelism, DeepSpeed-Ulysses): dimension 1 (the
      sequence) of every data input, and the heads of every attention over
      (`tp`, `sp`): the partitioner then exchanges sequence for heads with
      all-to-alls around attention.
    * `tp`: column-parallel (output features, dimension 0) for the first
      projection of attention and MLP blocks (`c_attn`, `c_fc`, `wq`, `wk`,
      `wv`, `w1`, `w3`, `fc1`, `qkv` weights and their biases) and
      row-parallel (input features, dimension 1) for the second (`c_proj`,
      `wo`, `w2`, `fc2`, `proj` weights). Optimizer state follows its
      parameter. With `vocab-parallel` (the default) the vocabulary of a
      language model is split over `tp` too (Megatron): dimension 0 of the
      tables of embeddings whose vocabulary is the loss' and of the weight
      (and bias) of the projection producing the loss' logits. A vocabulary
      tp does not divide is padded to a multiple of tp where it is used (zero
      rows appended to the table and the projection, the padded logits -inf
      before the loss), with a warning.
    A dimension that an axis does not divide stays replicated, with a warning
    that names the parameter, the dimension and the axis. Hand-written
    `rtx.sharding` seeds take precedence. With `sequence-parallel=true`
    (Megatron sequence parallelism) the data inputs' sequence dimension is
    split over `tp` too, so norms, dropout and residuals run on sequence
    shards, with an all-gather before and a reduce-scatter after each
    tensor-parallel region instead of an all-reduce.

    Example: `rtx-opt '-rtx-distribute=mesh=dp:2,tp:2 optimizer=adamw lr=0.01'`.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"dp:1\"",
           "Mesh axes and sizes, e.g. dp:2,tp:2">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "Optimizer: sgd or adamw">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW first-moment decay">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW second-moment decay">,
    Option<"eps", "eps", "double", "1e-8", "AdamW denominator epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0", "Weight decay">,
    Option<"clipNorm", "clip-norm", "double", "0.0",
           "Clip gradients to this global L2 norm (0: no clipping)">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Gradient accumulation: micro-batches per step">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Megatron sequence parallelism on the tp axis">,
    Option<"vocabParallel", "vocab-parallel", "bool", "true",
           "Split a language model's vocabulary over tp (embedding table, "
           "output projection, loss)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "Fuse gradient all-reduces into buckets of at most this many "
           "bytes (rtx-bucket-collectives; 25 MiB, PyTorch DDP's default; "
           "-1: one all-reduce per gradient)">,
    Option<"overlap", "overlap", "bool", "false",
           "Overlap the all-reduces with the compute after them "
           "(rtx-schedule-overlap; pays off when a core or the network is "
           "idle during the backward pass)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect", "mlir::func::FuncDialect"];
}

#endif // RTX_DIALECT_RTX_TRANSFORMS_PASSES_TD
