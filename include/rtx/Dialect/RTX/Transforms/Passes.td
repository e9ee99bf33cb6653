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

    `warmup-steps`, `decay-steps` and `min-lr` schedule AdamW's learning
    rate: a linear warm-up to `lr` over the first `warmup-steps` steps, then
    a cosine decay to `min-lr` at step `decay-steps` (0: no decay), as
    nanoGPT and Megatron do (`rtx.adamw_update` gives the formula). The
    updates compute the rate from their step count, so the schedule is part
    of the compiled step (no host-side scheduler, and a resumed run goes on
    from its saved step). SGD has no step count and refuses a schedule.

    Example: `rtx-opt -rtx-autodiff '-rtx-optimizer=kind=adamw lr=1e-3'`;
    `'-rtx-optimizer=lr=6e-4 warmup-steps=100 decay-steps=5000 min-lr=6e-5'`.
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
           "f32 master weights for bf16 parameters">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "AdamW: steps of linear learning-rate warm-up (0: none)">,
    Option<"decaySteps", "decay-steps", "int64_t", "0",
           "AdamW: the step at which the cosine decay reaches min-lr "
           "(0: no decay; otherwise > warmup-steps)">,
    Option<"minLr", "min-lr", "double", "0.0",
           "AdamW: the learning rate from decay-steps on (<= lr)">
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
    `micro-batches=1` changes nothing; a count below 1 is an error.

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

    Where the rules live: every op takes the default rule (its sharding
    rule's factors take the mesh axes of the shardings around it, parameters
    first, then results, then operands; operands are resharded; the op is
    cloned with local types), except the ops with a `PartitionOpInterface`
    model in `PartitionRules.cpp` (linear with a bias, embedding, slice,
    reduce mean, cross-entropy), which the pass attaches itself. Ops with the
    `RTX_PassesPartialSums` trait keep partial sums. A declared split that
    does not divide its dimension is an error naming the tensor, the
    dimension and the axes (pad it first, as `rtx-pad-vocabulary` does).
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

def RTXSplitStages : Pass<"rtx-split-stages", "mlir::func::FuncOp"> {
  let summary = "Splits a forward model into pipeline stages balanced by cost";
  let description = [{
    Runs on a forward model (before `rtx-autodiff`) and gives each op that
    computes an `rtx.stage` attribute: stage 0 first, `stages - 1` last, in
    program order. The cuts lie at layer boundaries: places in the op order
    where exactly one computed tensor is live (a transformer's residual
    stream between blocks). Among those, the split minimises the cost of the
    most expensive stage (exact dynamic programming), an op's cost being its
    FLOPs plus 4 per byte it reads and writes (CostOpInterface), so the
    embedding and the loss count where they lie. Parameters, inputs,
    constants and the ops computed from those alone get no stage: each stage
    that uses them has its own copy (rtx-pipeline), which is how a weight
    tied between the first and the last stage (GPT-2's `wte`) is held by
    both.

    A split written by hand is kept: when some ops already have `rtx.stage`,
    the pass only checks that the stages never decrease in program order and
    gives each op without one the stage of the op before it.

    With `report`, the split is reported as one remark per stage, at its
    first op: its ops, FLOPs, share of the cost, parameters and the bytes
    of the activations its ops compute (what a backward pass may keep). Asking for more stages than the model has layer
    boundaries plus one is an error that says how many there are.

    Example: `rtx-opt '-rtx-split-stages=stages=4 report=true' -rtx-autodiff`.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1",
           "Number of pipeline stages (1: no split)">,
    Option<"remarks", "report", "bool", "false",
           "Report each stage's ops, FLOPs, cost share, parameters and "
           "activations as remarks">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXPipeline : Pass<"rtx-pipeline", "mlir::ModuleOp"> {
  let summary = "Pipeline parallelism: one program per stage, run by a schedule";
  let description = [{
    Runs on a partitioned train step whose ops carry `rtx.stage`
    (rtx-split-stages before rtx-autodiff; rtx-autodiff gives each backward
    op its forward op's stage and `rtx.backward`). The module's mesh has the
    pipeline axis (`axis`, "pp" by default) of size p; the stages number
    p * `virtual`, stage s running on the ranks whose pipeline coordinate is
    s % p (Megatron's interleaving).

    The function, written for one micro-batch, becomes one function per
    pipeline coordinate (`@F_pp0`, ..., with `rtx.pipeline_rank`) that takes
    `micro-batches` (k) times as large a batch, micro-batch j being rows j,
    j+k, ... (as rtx-accumulate-gradients splits it), and runs the actions of
    the schedule (`schedule`: gpipe, 1f1b, interleaved or zb-h1, or the text
    of `schedule-file`, docs/pipeline.md) in order:
    - `sFm` / `sBm`: the forward / backward ops of stage s on micro-batch m;
      with `sWm` actions (zb-h1) `sBm` computes only what the previous stage
      needs (the input gradient) and `sWm` the rest (weight gradients);
    - `sSEND_Fm` / `sRECV_Fm` (`_B` for gradients): `rtx.send_start` /
      `rtx.recv` over the pipeline axis of every tensor the other stage
      uses, each with its own tag; the sends are waited for at the end;
    - `sREDUCE_GRAD`: the sums over micro-batches, divided by k, are done;
      a sum another stage needs (a weight used by two stages, as GPT-2 ties
      `wte` between the embedding and the LM head: Megatron's embedding
      group) is sent to it;
    - `OPTIMIZER`: the ops after the gradients (data-parallel all-reduces of
      the summed gradients, optimizer updates), on each stage that holds the
      weight. A weight used by two stages is updated by both, from the same
      sum of both stages' gradients added in the same order, so its copies
      stay bitwise equal.
    Parameters, inputs and constants are copied into each function that
    uses them; each function returns the results of the step that its
    stages own, each marked with its index in the step
    (`rtx.step_result`), so rtx-run and the emitted programs can put the
    step back together and check that the copies of a tied weight agree.

    The schedule is simulated first (rtx/Analysis/PipelineSchedule.h): an
    unsound one is an error naming the rank, the action and why. Errors
    also name an op that combines tensors of two stages within a
    micro-batch (gradient clipping's global norm, for now), a batch that
    has no dimension to grow, and a stage count that is not p * virtual.

    Example: `rtx-opt -rtx-split-stages=stages=2 -rtx-autodiff
    -rtx-optimizer -rtx-add-mesh=mesh=pp:2 -rtx-propagate-sharding
    -rtx-partition '-rtx-pipeline=schedule=1f1b micro-batches=4'`, or
    `-rtx-distribute=mesh=dp:2,pp:2 pipeline-micro-batches=4`.
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"pp\"",
           "The mesh axis of the pipeline">,
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved or zb-h1">,
    Option<"scheduleFile", "schedule-file", "std::string", "\"\"",
           "A schedule in rtx-schedule's text form (instead of schedule)">,
    Option<"microBatches", "micro-batches", "int64_t", "0",
           "Micro-batches per step (0: as many as pipeline ranks)">,
    Option<"virtualStages", "virtual", "int64_t", "1",
           "Stages per pipeline rank (interleaved)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect", "mlir::func::FuncDialect"];
}

def RTXRecompute : Pass<"rtx-recompute", "mlir::func::FuncOp"> {
  let summary = "Activation recompute: the backward pass recomputes activations";
  let description = [{
    Runs after `rtx-autodiff`. Each forward activation that the backward
    pass uses, and that the policy does not keep, is computed again by a
    copy of its forward ops placed right before its first backward use,
    from kept values, so that the forward pass's copy dies when the forward
    pass is done with it:
    - `full`: only the layer inputs are kept (the one tensor live at a layer
      boundary, as rtx-split-stages finds them), with parameters, inputs
      and constants; each layer's forward runs again in its backward;
    - `selective` (Megatron's): cheap, memory-heavy ops are recomputed
      (elementwise chains, softmax, reshapes, transposes, broadcasts,
      slices), from the kept results of the others (matmuls, attention,
      norms);
    - `none`: nothing changes.
    The copies compute the same values with the same ops, so the losses and
    gradients are those without recompute (bit for bit on one rank). A copy
    of an op with a pipeline stage runs in that stage's backward action
    (`rtx.backward`), so recompute works with pipelines.

    With `report`, a remark gives the static estimate of peak activation
    bytes (rtx/Analysis/ActivationMemory.h) before and after: full < selective
    < none on transformer blocks.

    Example: `rtx-opt -rtx-autodiff '-rtx-recompute=policy=selective'
    -rtx-optimizer`, or `-rtx-distribute=mesh=pp:2 recompute=full`.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"none\"",
           "none, full or selective">,
    Option<"remarks", "report", "bool", "false",
           "Report the estimated peak activation bytes before and after">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXShardState : Pass<"rtx-shard-state", "mlir::ModuleOp"> {
  let summary = "ZeRO-1/2/3, FSDP and HSDP: shards optimizer state, gradients and parameters over a data axis";
  let description = [{
    Data parallelism keeps a whole copy of the model state on every rank: for
    mixed-precision Adam 16 bytes per parameter, which caps the model a rank
    can train long before its activations do (the ZeRO paper's 16Ψ). This
    pass, on the partitioned step (after `rtx-partition`, before
    `rtx-bucket-collectives`), shards that state over the ranks of `axis`
    (default `dp`), as DeepSpeed's ZeRO and PyTorch's FSDP do:
    - `stage=1`: each rank keeps and updates 1/N of the optimizer state; the
      gradients are still all-reduced whole; the new parameters are
      all-gathered after the update;
    - `stage=2`: the gradients are reduce-scattered instead (each rank
      receives the sum of its shard only);
    - `stage=3` (FSDP's FULL_SHARD): the parameters too live as shards;
      each unit's are all-gathered right before its first use in the forward
      pass and, with `reshard-after-forward` (the default), again before its
      first use in the backward pass, so that a gathered copy dies after the
      ops that use it; with `prefetch` the next unit's gather starts while
      the current unit computes (`rtx.all_gather_start`, `rtx.wait`).

    State is grouped into units (`unit=block`: one per transformer block,
    found from parameter names `….N.…`, and one for the rest; `param`: one
    per parameter; `all`: one; `size` with `min-unit-params=N`: FSDP's
    size-based auto-wrap on the tree of dotted names, bottom up, a prefix
    becomes a unit once the parameters under it not yet in a smaller unit
    reach N elements; `prefix` with `unit-prefixes=a,b`: the given name
    prefixes, as the Python frontend finds them from module classes; what
    no unit takes goes to one "root" unit), and within a unit by element
    type and by the
    other axes that split its members (tensor parallelism keeps its own
    layout: a member is this rank's tp block). Each group is one flat
    buffer: the members flattened and concatenated, padded with zeros to a
    multiple of N (the documented rule for sizes N does not divide: at most
    N-1 elements per buffer), so each gather and each reduce-scatter is one
    collective per buffer. The buffers are new arguments and results that
    carry `rtx.flat` (which member lies where); the other results carry
    `rtx.step_result`, so rtx-run and emitted programs write the same results
    and state files as plain data parallelism.

    Why it is exact: AdamW and SGD are elementwise with one learning rate and
    weight decay for all parameters, so one update over a buffer's shard
    computes the same numbers as the per-parameter updates; a reduce-scatter
    is an all-reduce whose pieces are kept apart; gradient clipping sums the
    squares of each shard and all-reduces them over `axis` and the axes that
    split the buffer's members, so the norm is the global one (not a shard's,
    the bug users of FSDP reported). The gradients may be reduced in another
    dtype (`reduce-dtype`, fp32 by default).

    HSDP: on a mesh with a `dp_replicate` axis (rtx-seed-shardings splits
    the batch over `dp_replicate` x `dp`), the state is sharded over `axis`
    and replicated across `dp_replicate`: each shard's gradient is
    reduce-scattered over `axis`, then all the shards are all-reduced over
    `dp_replicate` in one collective.

    Pipelines: each pipeline coordinate's function (rtx-pipeline's
    `@NAME_ppK`) shards its own stage's state; forward and backward uses are
    told apart by `rtx.backward`; a weight two stages tie is a member on
    both, and both copies stay equal.

    Offload (`offload=cpu|nvme`, ZeRO-Offload): the buffers of optimizer
    state (and at stage 3 the parameter shards) leave device memory between
    steps. Each becomes an argument and a result marked `rtx.offload`: a
    reference to host memory (`cpu`) or to a file in the run's offload
    directory (`nvme`). Each use reads it with `rtx.offload_fetch_start` +
    `rtx.wait`, the fetch for the next use starting where the previous use
    runs (double buffering), and the update's new value goes back with
    `rtx.offload_store` right after it is computed. The runtime bounds the
    buffers in flight, so a slow disk slows the step instead of growing
    memory. The update itself runs where the fetched value is: on the host
    in a CPU program; a GPU program runs the update of an offloaded buffer
    with the host kernels (ZeRO-Offload's CPU Adam).

    Example: `rtx-opt '-rtx-distribute=mesh=dp:4 shard-state=3'`, or
    `-rtx-shard-state=stage=2` on a partitioned step; with offload,
    `'-rtx-distribute=mesh=dp:4 shard-state=3 offload=nvme'`.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "1", "ZeRO stage: 1, 2 or 3">,
    Option<"axis", "axis", "std::string", "\"dp\"",
           "The mesh axis to shard over">,
    Option<"unit", "unit", "std::string", "\"block\"",
           "Units of flat buffers: block, param, all, size (min-unit-params) "
           "or prefix (unit-prefixes)">,
    Option<"minUnitParams", "min-unit-params", "int64_t", "0",
           "unit=size: a name prefix becomes a unit once the parameters "
           "under it that no smaller unit took reach this many elements "
           "(FSDP's size_based_auto_wrap_policy)">,
    ListOption<"unitPrefixes", "unit-prefixes", "std::string",
               "unit=prefix: the name prefixes that are units (the modules "
               "FSDP's transformer_auto_wrap_policy wraps); a parameter "
               "belongs to the longest one its name starts with">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool", "true",
           "Stage 3: gather the parameters again for the backward pass">,
    Option<"prefetch", "prefetch", "bool", "true",
           "Stage 3: start the next unit's gather before this unit computes">,
    Option<"reduceDtype", "reduce-dtype", "std::string", "\"f32\"",
           "Element type of the gradient reduction: f32, bf16 or f16">,
    Option<"remarks", "report", "bool", "false",
           "A remark per flat buffer: its members, length and padding">,
    Option<"offload", "offload", "std::string", "\"none\"",
           "Where optimizer state (and stage 3's parameter shards) live "
           "between steps: none, cpu (host memory) or nvme (files)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXVerifyPipelineSchedule
    : Pass<"rtx-verify-pipeline-schedule", "mlir::func::FuncOp"> {
  let summary = "Proves a function's pipeline schedule sound by simulating it";
  let description = [{
    Checks the pipeline schedule of each function that has one. A schedule
    is the `rtx.pipeline_schedule` attribute, one string per rank in the
    text form of `rtx-schedule` (docs/pipeline.md), with
    `rtx.virtual_stages` when a rank holds several stages. The pass runs the
    schedule in the simulator (rtx/Analysis/PipelineSchedule.h) and reports
    each problem as an error at the function:
    - a receive without its send;
    - a backward before its forward, or a weight gradient before its input
      gradient;
    - a cycle of ranks that wait on each other;
    - counts that do not balance.
    Each error names the rank, the action and why. A sound schedule is left
    as it is.

    Example:

    ```mlir
    // expected-error @below {{rank 1, action 0: '1RECV_F0': no rank sends it}}
    func.func @step() attributes {rtx.pipeline_schedule = [
        "rank 0: 0F0 0RECV_B0 0B0", "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0"]} {
      return
    }
    ```
  }];
}

def RTXPlanMemory : Pass<"rtx-plan-memory", "mlir::ModuleOp"> {
  let summary = "Static peak memory per rank of the final step, by kind";
  let description = [{
    Runs on the final per-rank program (after `rtx-distribute`, with or
    without `rtx-shard-state`). For each step function it walks the body as
    the emitted program runs it: the arguments (parameters, optimizer
    state, the batch) are held the whole step; each computed tensor lives
    from its op until the emitted step releases it (its last use, or the
    wait of a collective that reads it); `rtx.reshape` is a view of its
    input's buffer; every buffer counts as the host allocator hands it out
    (64-byte granules, 2 MiB pages from 32 MiB on). The peak, and its split
    into parameters, gradients, optimizer state, activations (the batch and
    the forward pass), communication buffers (results of collectives) and
    temporaries (the backward pass's other tensors), is reported as a
    remark with a table, one per step function; with `report-file` it is
    also written as JSON:

    ```json
    {"functions": [{"name": "gpt2", "peak_bytes": 51380224,
       "argument_bytes": 20447232, "peak_op": "rtx.adamw_update",
       "by_kind": {"parameters": 9437184, "gradients": 6815744, ...}}]}
    ```

    It changes nothing in the program. The emitted program measures the
    real peak of each step (`step_peak_bytes` in its metrics): the memory
    gate (`scripts/memory-gate.py`) checks the two agree within 10%.

    Example: `rtx-opt '-rtx-distribute=mesh=dp:4 shard-state=3'
    '-rtx-plan-memory=report-file=plan.json' -o /dev/null`.
  }];
  let options = [
    Option<"reportFile", "report-file", "std::string", "\"\"",
           "Also write the plans as JSON to this file">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXAutoPartition : Pass<"rtx-auto-partition", "mlir::ModuleOp"> {
  let summary = "Chooses the parallel plan from a cost model of the real "
                "program on a hardware profile";
  let description = [{
    Runs on a forward model (global shapes, before `rtx-distribute`) and
    chooses how to train it on `devices` devices of a hardware profile
    (`profile`: a built-in name such as `dgx-a100`, or a file written by
    `rtx-topology` and `rtx-calibrate`): data, tensor and pipeline degrees,
    sequence parallelism, the ZeRO stage, micro-batches, virtual stages and
    schedule, recompute, overlap, and the order of the mesh axes over the
    devices (tp inside the fast links).

    The costs are the compiler's own: the model is compiled with the real
    passes on one device, with tp=2 (with and without sequence parallelism)
    and with dp=2, cut into units at its layer boundaries; matching the
    programs op by op gives each op's exact FLOPs, bytes and GEMM shape
    under any plan, and the collectives tp inserts. Time is a roofline per
    op, alpha-beta per collective on the links its group spans, the
    pipeline simulator of `rtx-pipeline` for bubbles; memory follows
    `rtx-plan-memory`'s kinds. The search prunes by divisibility, memory
    and a time bound (all proven safe) and is otherwise exhaustive.

    Objectives (`objective`): `throughput` (fastest within the memory
    limit, the default), `memory`, `compute-balanced`, `communication`,
    `hybrid` (with `weights=memory,compute,communication`), `tp-first`,
    `pp-first`. A plan must leave `memory-margin` of the device's memory
    free and, with pipeline stages, keep the slowest stage within
    `balance-threshold` times the mean.

    The choice is written as a module attribute `rtx.plan` (the plan, its
    prediction, and the `rtx-distribute` options that realise it) and, with
    pp > 1, as `rtx.stage` on the forward ops (rtx-split-stages keeps hand
    stages); `rtx-distribute=from-plan=true` builds the program from it. A
    remark carries the report (predicted step time, tokens/s, memory per
    rank by kind, communication per link class, bubble, the runner-up plans
    and why each lost); `report-file` writes it as JSON. When no plan fits,
    the error says how much memory is missing and which margin or objective
    would change it.

    Example: `rtx-opt gpt2.mlir '-rtx-auto-partition=profile=cpu-host
    devices=2' '-rtx-distribute=from-plan=true'`.
  }];
  let options = [
    Option<"profile", "profile", "std::string", "\"\"",
           "Hardware profile: a built-in name or a JSON file (required)">,
    Option<"devices", "devices", "int64_t", "0",
           "Devices to plan for (required)">,
    Option<"objective", "objective", "std::string", "\"throughput\"",
           "throughput, memory, compute-balanced, communication, hybrid, "
           "tp-first or pp-first">,
    Option<"memoryMargin", "memory-margin", "double", "0.1",
           "Share of device memory a plan must leave free">,
    Option<"balanceThreshold", "balance-threshold", "double", "1.2",
           "Largest ratio of the slowest pipeline stage to the mean">,
    Option<"weights", "weights", "std::string", "\"1,1,1\"",
           "hybrid: weights of memory, compute and communication">,
    Option<"globalBatch", "global-batch", "int64_t", "0",
           "Sequences per step (0: the model's batch)">,
    Option<"varyMicroBatch", "vary-micro-batch", "bool", "false",
           "Also consider per-rank micro-batch sizes other than the model's "
           "batch over dp (the plan is then a report only)">,
    Option<"dp", "dp", "int64_t", "0", "Fix the data-parallel degree">,
    Option<"tp", "tp", "int64_t", "0", "Fix the tensor-parallel degree">,
    Option<"pp", "pp", "int64_t", "0", "Fix the pipeline-parallel degree">,
    Option<"zero", "zero", "int64_t", "-1",
           "Fix the ZeRO stage (0 to 3; -1: searched)">,
    Option<"sequenceParallel", "sequence-parallel", "std::string",
           "\"any\"", "Fix sequence parallelism: true, false or any">,
    Option<"recompute", "recompute", "std::string", "\"any\"",
           "Fix recompute: none, selective, full or any">,
    Option<"schedule", "schedule", "std::string", "\"any\"",
           "Fix the pipeline schedule: gpipe, 1f1b, interleaved, zb-h1 or "
           "any">,
    Option<"microBatchSize", "micro-batch-size", "int64_t", "0",
           "Fix the sequences per rank and micro-batch (0: searched)">,
    Option<"virtualStages", "virtual-stages", "int64_t", "0",
           "Fix the virtual stages per pipeline rank (0: searched)">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "The optimizer the step will use: sgd or adamw">,
    Option<"mixedPrecision", "mixed-precision", "bool", "false",
           "f32 master weights for bf16 parameters (rtx-optimizer)">,
    Option<"exhaustive", "exhaustive", "bool", "false",
           "Price every plan, without pruning (the tests' reference)">,
    Option<"keep", "keep", "int64_t", "5",
           "Plans in the report: the choice and its runners-up">,
    Option<"reportFile", "report-file", "std::string", "\"\"",
           "Also write the report as JSON to this file">,
    Option<"remarks", "remarks", "bool", "true",
           "Emit the text report as a remark">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect", "mlir::func::FuncDialect"];
}

def RTXAddMesh : Pass<"rtx-add-mesh", "mlir::ModuleOp"> {
  let summary = "Adds the rtx.mesh that the distribution passes split over";
  let description = [{
    Adds one `rtx.mesh` to a module that has none, from `mesh=NAME:SIZE,...`
    (axes in order, major to minor). The mesh is named by its shape, as
    Shardy names meshes: `mesh=dp:2,tp:2` adds

    ```mlir
    rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]
    ```

    so that `rtx-pad-vocabulary`, `rtx-seed-shardings`,
    `rtx-propagate-sharding` and `rtx-partition` find it. An axis given
    twice, a size below 1, a malformed entry, an empty `mesh=`, sizes whose
    product (the number of ranks) overflows int64, or a module that already
    has a mesh is an error.

    Example: `rtx-opt '-rtx-add-mesh=mesh=dp:2,tp:2'`.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", "\"dp:1\"",
           "Mesh axes and sizes, e.g. dp:2,tp:2">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXPadVocabulary : Pass<"rtx-pad-vocabulary", "mlir::ModuleOp"> {
  let summary = "Pads a vocabulary that the tp axis does not divide";
  let description = [{
    A language model's vocabulary is split over `tp` (Megatron's
    vocab-parallel embedding, LM head and cross-entropy), but vocabularies
    are rarely multiples of tp: GPT-2's 50257 classes are prime to every
    tp > 1, and without padding the LM head (the largest matrix of a small
    GPT) and its logits would stay whole on every rank. Megatron pads the
    vocabulary to a multiple of tp in the checkpoint; rtx pads it where it
    is used instead, so parameters, checkpoints and the single-device
    program keep their shapes.

    The rule, for each `rtx.cross_entropy` whose logits come from an
    `rtx.linear` over parameters (the LM head) and whose vocabulary V the
    mesh axis `axis` (size T) does not divide: with P = ceil(V / T) * T, the
    head's weight and bias, and the table of every `rtx.embedding` that
    reads the same parameter (GPT-2 ties them), are concatenated with P - V
    zero rows (`rtx.concat`, seeded as split over `axis` along the rows);
    the head then produces P logits, and the P - V padded ones are set to
    -inf (`rtx.masked_fill`) before the loss. A warning says so. Run before
    `rtx-autodiff`, so the backward pass is derived from the padded forward.

    Why it is exact: a padded class has logit -inf, so exp(-inf - max) = 0:
    it takes no share of the softmax, never wins its maximum, and no label
    names it; its gradient is 0, the zero rows get no update, and the
    gradient of the real rows is that of the unpadded model (the concat's
    gradient is a slice). The loss and every gradient are the unpadded
    model's, up to rounding. The parameters stay replicated; their gradient
    is gathered once per step to drop the padding.

    Example: on `rtx.mesh @mesh_tp4 ["tp"=4]`, a 37-class head

    ```mlir
    %w = rtx.param "lm_head.weight" ... : tensor<37x32xf32>
    %logits = rtx.linear %h, %w : ... -> tensor<4x8x37xf32>
    %loss = rtx.cross_entropy %logits, %labels : ...
    ```

    becomes a 40-class one: `rtx.concat %w, %zeros dim 0 : ... ->
    tensor<40x32xf32>` split over `tp`, a `tensor<4x8x40xf32>` linear, and
    `rtx.masked_fill` of classes 37..39 with -inf before the loss. Nothing
    happens without an axis `axis` of size > 1, or when it divides V.
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"tp\"",
           "The mesh axis the vocabulary is split over">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXSplitFusedProjections
    : Pass<"rtx-split-fused-projections", "mlir::ModuleOp"> {
  let summary = "Splits a fused q | k | v projection into one per part";
  let description = [{
    GPT-2, nanoGPT and ViT compute queries, keys and values with one
    projection whose output features are the three side by side
    (`c_attn`: `[C] -> [3C]`, then `split(C)`), not ordered by head as
    Megatron lays them out. Split over `tp` as it is, each rank's block of
    features would hold some of q and some of k, and tensor parallelism
    would need an all-gather of the whole `[B, T, 3C]` projection before
    the split, in every layer, forward and backward.

    The rule: an `rtx.split` into k equal parts whose input is a linear (or
    a matmul over a parameter right-hand side, GPT-2's `Conv1D`) followed
    only by reshapes, transposes and the addition of a broadcast bias, each
    with one use, where the k parts are consecutive blocks of the
    projection's output features, becomes k projections, one per part, over
    k parameters `NAME@0` ... `NAME@k-1`. Each is a block of the user's
    parameter `NAME`, which it names in `rtx.part_of = {name = "NAME", dim =
    D, offset = O, size = S}`: loading (`--params`, a state dict, a
    safetensors file) reads that block of `NAME`, saving reassembles
    `NAME`, and initial values are drawn as `NAME`'s, so the program
    computes what the fused one does, whatever the mesh. A parameter used
    elsewhere (tied) is left fused. The parts are then ordinary
    column-parallel projections that rtx-seed-shardings splits by head: each
    rank stores its block of q, of k and of v, which is Megatron's layout,
    with no gather. rtx-distribute runs it when the mesh has a `tp` axis
    larger than 1, before autodiff.

    Example: `%qkv = rtx.linear %x, %w, %b : ... -> tensor<2x8x96xf32>` with
    `%w = rtx.param "attn.c_attn.weight" ... : tensor<96x32xf32>` and
    `%q, %k, %v = rtx.split %qkv dim 2` becomes three `rtx.linear`s over
    `rtx.param "attn.c_attn.weight@0" ... {rtx.part_of = {dim = 0, name =
    "attn.c_attn.weight", offset = 0, size = 96}} : tensor<32x32xf32>`, `@1`
    (offset 32) and `@2` (offset 64).
  }];
}

def RTXFuseEpilogues : Pass<"rtx-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fuses GEMMs with the bias, GELU and bias-gradient ops around them";
  let description = [{
    The problem: in a GPT train step each MLP's `rtx.linear` writes its
    pre-activation to memory and `rtx.gelu` reads it back; in the backward
    pass `rtx.reduce sum` rereads the output gradient the weight-gradient
    GEMM has just read, and `rtx.unary_grad gelu` rereads the product of the
    GEMM before it. cuBLASLt computes these in the GEMM's epilogue, on data
    still in registers. This pass rewrites each such group into one
    `rtx.gemm_epilogue`, so the IR says which GEMM runs which epilogue (the
    runtime pattern-matches nothing):

    - forward: `gelu(linear(x, W, b))` becomes `bias_gelu[_tanh]`; when the
      backward pass reads the pre-activation (`rtx.unary_grad` of the same
      GELU form), `bias_gelu[_tanh]_aux`, whose second result replaces it.
      Not fused: a linear without a bias, another activation, a GELU whose
      input is not the linear itself (an `rtx.all_reduce` of a row-parallel
      linear between them), a pre-activation with other users.
    - backward, weight and bias gradient: `matmul(dY, X) transpose_lhs` and
      `reduce sum dY dims [0]` (the sum of the GEMM's lhs over its
      contracting dimension; `dims [1]` without `transpose_lhs`) become one
      `bias_grad` whose two results replace them.
    - backward through the GELU: `unary_grad gelu[_tanh] pre, P` where `P` is
      a `rtx.matmul` (or a reshape of one) used only there becomes
      `dgelu[_tanh]` (reshapes of `pre` and of the result, which are views,
      bridge a `[B, S, F]` activation and the GEMM's `[B*S, F]`).

    The fused op computes exactly what the ops it replaces compute (its CPU
    kernel is their composition), so `rtx-run` gives the same numbers.
    `rtx.gemm_epilogue` has no sharding rule and no VJP: run this pass after
    `rtx-autodiff`, `rtx-optimizer` and partitioning, as the last pass
    before codegen. It only rewrites ops of one block whose operands are
    local tensors, so it works the same on per-rank programs with
    collectives; recorded shardings (`rtx.sharding`) move to the fused op.

    Example: `rtx-opt -rtx-autodiff -rtx-optimizer=kind=adamw
    -rtx-fuse-epilogues gpt.mlir` (docs/gpu.md).
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXRepeatKVHeads : Pass<"rtx-repeat-kv-heads", "mlir::ModuleOp"> {
  let summary = "Repeats key/value heads that the tp axis does not divide";
  let description = [{
    Grouped-query attention (Llama 3: 32 query heads, 8 key/value heads)
    splits by head over `tp` when tp divides both counts. With fewer
    key/value heads than tp ranks (8 on tp=16, or 2 on tp=4), or a count tp
    does not divide, a rank's query heads still read whole key/value heads,
    but those are no longer one block per rank. Megatron keeps such key/value
    heads whole on every rank that shares them; rtx does the same: for each
    `rtx.attention` whose query heads tp divides and whose key/value heads
    it does not, the keys and values are repeated to one head per query head
    (`rtx.reshape` to `[B, Hkv, 1, S, D]`, `rtx.broadcast` to `[B, Hkv, G,
    S, D]`, `rtx.reshape` to `[B, Hq, S, D]`: head h is key/value head h /
    G, the pairing rtx.attention makes itself). rtx-seed-shardings then
    leaves the key and value projections whole (their heads do not divide),
    and each rank computes all key/value heads and keeps the ones its query
    heads read, with no communication in the forward pass; the backward pass
    gathers the repeated key/value gradients over tp before summing each
    group (an all-gather of `[B, S, Hq/tp, D]` per rank for keys and for
    values). rtx-distribute runs it when the mesh has a tp axis larger than
    1, before autodiff.
  }];
}

def RTXSeedShardings : Pass<"rtx-seed-shardings", "mlir::ModuleOp"> {
  let summary = "Megatron-style sharding seeds found from the graph's structure";
  let description = [{
    Users who do not annotate each weight still expect Megatron's layout.
    Matching parameter names cannot give it: a Llama block whose projections
    are called `q, k, v, o, gate, up, down` (or Hugging Face's `q_proj, ...`)
    matched no name rtx knew, and on tp=3 it was not partitioned at all, 0
    collectives, every rank computing everything. This pass finds the
    patterns in the graph instead and writes `rtx.sharding` seeds on
    parameters (`rtx.param` ops, or function arguments with `rtx.param`, whose
    optimizer state follows) and data inputs, for `rtx-propagate-sharding`.
    Seeds already present (by hand or by a planner) are kept.

    Rules, on the mesh of the module (axes `dp`, `dp_replicate`, `tp`, `sp`):
    * `tp`, vocabulary (with `vocab-parallel`): the weight and bias of the
      linear producing a cross-entropy's logits (the LM head) and the table
      of every embedding whose vocabulary is that cross-entropy's, along the
      vocabulary (dimension 0).
    * `tp`, Megatron pairs: a linear (or matmul) B over a parameter whose
      input is computed, through elementwise ops (`rtx.gelu`, `rtx.silu`,
      `rtx.mul` of two such values, ...), `rtx.rope`, `rtx.reshape`,
      `rtx.transpose`, `rtx.split` and the query, key and value of
      `rtx.attention`, only from linears (or matmuls) A1..An over parameters:
      each Ai is column-parallel (its output features, and bias, split) and B
      row-parallel (its input features split; its bias stays whole), which
      needs one all-reduce after B and none in between. Only the forward
      computation (what the loss depends on) is matched; a linear takes one
      role, the first pair in program order wins.
    * `seed-hints=NAME:column|row,...`: parameters whose name ends with NAME
      (a dot-separated suffix; `q_proj` matches `layers.0.q_proj.weight` and
      `.bias`) take that role, before the rules above.
    * `dp`: dimension 0 (the batch) of every data input (arguments that are
      not optimizer state, and `rtx.input`); with a `dp_replicate` axis
      (HSDP's replica groups, see rtx-shard-state) over `dp_replicate` x
      `dp`.
    * `sp` (DeepSpeed-Ulysses): dimension 1 (the sequence) of every data
      input, and the heads of every attention over (`tp`, `sp`).
    * `sequence-parallel` (Megatron sequence parallelism): dimension 1 of
      every data input over `tp` too.

    Why it is exact: a seed changes where values live, never what is
    computed; `rtx-partition` inserts the collectives any layout needs and
    `rtx-verify-distribution` proves the result. A dimension that an axis
    does not divide stays replicated, with a warning that names the
    parameter, the dimension and the axis (padding is rtx-pad-vocabulary's).
    A tp axis that splits no parameter is a warning that names the axis and
    why, never silence.

    Example: on `rtx.mesh @mesh_tp2 ["tp"=2]`,

    ```mlir
    %w1 = rtx.param "up" ... : tensor<64x32xf32>
    %h = rtx.linear %x, %w1 : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %a = rtx.gelu %h : tensor<8x64xf32>
    %w2 = rtx.param "down" ... : tensor<32x64xf32>
    %y = rtx.linear %a, %w2 : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    ```

    seeds `up` with `#rtx.sharding<@mesh_tp2, [["tp"], []]>` and `down` with
    `#rtx.sharding<@mesh_tp2, [[], ["tp"]]>`.
  }];
  let options = [
    Option<"vocabParallel", "vocab-parallel", "bool", "true",
           "Split a language model's vocabulary over tp (embedding table, "
           "output projection, loss)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Megatron sequence parallelism: split data inputs' sequence over tp">,
    ListOption<"seedHints", "seed-hints", "std::string",
               "Parameter-name suffixes with a tensor-parallel role, "
               "NAME:column or NAME:row (e.g. q_proj:column,o_proj:row)">,
    Option<"strictTP", "strict-tp", "bool", "false",
           "Refuse a program in which a linear or matmul over a parameter "
           "stays whole on the tp axis (key/value heads that tp does not "
           "divide, kept whole by design, excepted)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

//===----------------------------------------------------------------------===//
// Fusions of memory-bound ops (the last passes before codegen)
//===----------------------------------------------------------------------===//

def RTXFuseResidualNorm
    : Pass<"rtx-fuse-residual-norm", "mlir::func::FuncOp"> {
  let summary = "Fuses a residual add with the layernorm or rmsnorm it feeds";
  let description = [{
    A pre-norm transformer adds each block's output to the residual stream
    and normalises the sum at once: `rtx.add` writes the sum, then
    `rtx.layernorm` reads it back, two passes over a tensor that is
    memory-bound on a GPU. This pass replaces an `rtx.add` whose result
    feeds an `rtx.layernorm` (or `rtx.rmsnorm`) in the same block by
    `rtx.add_layernorm` (`rtx.add_rmsnorm`), which reads both operands once
    and writes the sum (still used by the next residual add) and the
    normalised value once. The fused kernel rounds the sum to the element
    type before normalising it, as the separate ops do, so the results are
    bit for bit those of the ops it replaces (on the CPU). It runs on a
    whole train step after autodiff, the optimizer and partitioning (it
    rewrites local ops only, so a partitioned per-rank program with its
    collectives stays valid); an add whose result is used before the norm
    in a way the fused op cannot precede, or a norm on another type, stays
    as it is. Backward: `rtx.layernorm_grad`'s input gradient added to the
    residual's gradient is left unfused (see docs/gpu.md).

    Example: `rtx-opt -rtx-autodiff -rtx-optimizer=kind=adamw
    -rtx-fuse-residual-norm`.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXFuseCrossEntropy
    : Pass<"rtx-fuse-cross-entropy", "mlir::func::FuncOp"> {
  let summary = "Fuses the loss and its gradient into one pass over the logits";
  let description = [{
    A train step computes `rtx.cross_entropy %logits, %labels` in the
    forward pass and `rtx.cross_entropy_grad %logits, %labels, %dloss` (the
    seed 1.0 of rtx-autodiff, or what scales it) in the backward pass: two
    reads of the logits, the largest activation of a language model
    (tokens x vocabulary), each recomputing the softmax statistics. This
    pass replaces such a pair on the same logits, labels and
    `ignore_index`, in one block, by `rtx.cross_entropy_with_grad`, which
    computes each row's max and sum of exponentials once and writes the
    loss and the gradient in one pass, never storing the probabilities;
    its results are bit for bit those of the pair (on the CPU). The fused
    op goes where the loss was computed when the gradient's operands are
    available there (a constant seed is moved up), otherwise where the
    gradient was, when no use of the loss comes in between; otherwise the
    pair stays. The vocabulary-parallel loss of a tp-partitioned program
    (`rtx.vocab_logit_stats`, ...) is not fused. Runs after autodiff, the
    optimizer and partitioning, on local ops only.

    Example: `rtx-opt -rtx-autodiff -rtx-optimizer=kind=adamw
    -rtx-fuse-cross-entropy`.
  }];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

def RTXFuseAdamW : Pass<"rtx-fuse-adamw", "mlir::func::FuncOp"> {
  let summary = "Fuses a step's AdamW updates into one multi-tensor update";
  let description = [{
    `rtx-optimizer` updates each parameter with its own `rtx.adamw_update`:
    on a GPU, GPT-2's 148 parameters are 148 small launches whose fixed cost
    outweighs their bytes. This pass groups the `rtx.adamw_update` ops of a
    block that share `step`, the hyper-parameters, the learning-rate
    schedule (which the fused op carries) and the element types
    (parameters, gradients) into one `rtx.multi_adamw_update`, placed at
    the first of them, taking each update whose operands are all defined
    there; the GPU runs it as one launch over a table of chunks (apex's
    multi_tensor_apply). Its CPU kernel is each update's own kernel, so
    results are bit for bit unchanged. With gradient clipping
    (`rtx-optimizer=clip-norm=...`), the chain of `rtx.convert`, `rtx.mul`,
    `rtx.reduce` and `rtx.add` ops that sums the gradients' squares becomes
    one `rtx.sum_squares` over the list (bit for bit, one read of each
    gradient). Runs after the optimizer and partitioning, on local ops only;
    a lone update stays as it is.

    Memory: a fused update allocates the new parameters and moments of its
    whole group before the old ones are released, where separate updates
    release each tensor's as they go; `bucket-bytes` bounds a group's
    parameter bytes (as PyTorch's `foreach` optimizers bound theirs) and so
    that extra peak (rtx-plan-memory reports it).

    Example: `rtx-opt -rtx-autodiff '-rtx-optimizer=kind=adamw
    clip-norm=1.0' '-rtx-fuse-adamw=bucket-bytes=67108864'`.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "0",
           "Largest parameter bytes of one multi-tensor update (0: no limit)">
  ];
  let dependentDialects = ["mlir::rtx::RTXDialect"];
}

#endif // RTX_DIALECT_RTX_TRANSFORMS_PASSES_TD
