//===- RTXFusedOps.td - ops that fusion passes create -------*- tablegen -*-===//
//
// Memory-bound ops of a training step fused into one pass over memory: a
// residual add with the normalisation after it, the loss with its gradient,
// and the optimizer updates of a step in one launch. Only the fusion passes
// (rtx-fuse-residual-norm, rtx-fuse-cross-entropy, rtx-fuse-adamw) create
// them, after autodiff, the optimizer and partitioning, as the last passes
// before codegen: so they have no sharding rule and no VJP (the passes that
// would need them have run). Each computes exactly what the ops it replaces
// compute, in the same precision (its CPU kernel is the reference; see
// runtime/include/rtxrt/kernels/KernelApi.def).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXFUSEDOPS_TD
#define RTX_DIALECT_RTX_IR_RTXFUSEDOPS_TD

include "rtx/Dialect/RTX/IR/RTXBase.td"

// A fused op: a runtime kernel and a cost, but no sharding rule or VJP (it
// exists only after the passes that use those).
class RTX_FusedOp<string mnemonic, list<Trait> traits = []>
    : RTX_Op<mnemonic, !listconcat(traits, [Pure, RTX_Kernel,
        DeclareOpInterfaceMethods<RTX_CostOpInterface, ["getFlops"]>])>;

def RTX_AddLayerNormOp : RTX_FusedOp<"add_layernorm", [
    AllTypesMatch<["input", "residual", "sum", "result"]>]> {
  let summary = "residual add and layer normalisation in one pass";
  let description = [{
    `sum = input + residual; result = layernorm(sum, scale, bias, epsilon)`:
    what `rtx.add` followed by `rtx.layernorm` computes, bit for bit (the sum
    is rounded to the element type before it is normalised, as the separate
    ops store it), reading `input` and `residual` once and writing `sum` and
    `result` once. Created by `rtx-fuse-residual-norm` after autodiff and
    partitioning, so it has no sharding rule and no VJP. Cost: 8 FLOPs per
    element (9 with a bias).

    Example:

    ```mlir
    %h, %y = rtx.add_layernorm %x, %r, %g, %b eps 1.0e-05
        : tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$residual,
                       RTX_FloatTensor:$scale, Optional<RTX_FloatTensor>:$bias,
                       F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$sum, RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $scale (`,` $bias^)? `eps` $epsilon attr-dict `:`
    type($input) `,` type($scale) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def RTX_AddRMSNormOp : RTX_FusedOp<"add_rmsnorm", [
    AllTypesMatch<["input", "residual", "sum", "result"]>]> {
  let summary = "residual add and RMS normalisation in one pass";
  let description = [{
    `sum = input + residual; result = rmsnorm(sum, scale, epsilon)`: what
    `rtx.add` followed by `rtx.rmsnorm` computes, bit for bit, in one pass
    over memory. Created by `rtx-fuse-residual-norm` after autodiff and
    partitioning (no sharding rule, no VJP). Cost: 6 FLOPs per element.

    Example:

    ```mlir
    %h, %y = rtx.add_rmsnorm %x, %r, %g eps 1.0e-06
        : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$residual,
                       RTX_FloatTensor:$scale, F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$sum, RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $scale `eps` $epsilon attr-dict `:`
    type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RTX_CrossEntropyWithGradOp : RTX_FusedOp<"cross_entropy_with_grad", [
    AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "softmax cross-entropy and its gradient in one pass";
  let description = [{
    The results of `rtx.cross_entropy %logits, %labels` and
    `rtx.cross_entropy_grad %logits, %labels, %loss_grad` (same
    `ignore_index`), bit for bit, from one pass over each row of the logits:
    the row's max and sum of exponentials, its loss, then `logits_grad[t, :]
    = loss_grad * (softmax(logits[t, :]) - onehot(labels[t])) / n` written
    directly, so the probabilities are never stored. `loss` is the mean over
    the `n` tokens whose label is not `ignore_index` (0 when there are none;
    ignored rows get zero gradients). Created by `rtx-fuse-cross-entropy`
    after autodiff and partitioning (no sharding rule, no VJP); the
    vocabulary-parallel form of the loss stays unfused. Cost: 11 FLOPs per
    logit.

    Example:

    ```mlir
    %loss, %dlogits = rtx.cross_entropy_with_grad %logits, %labels, %dloss
        ignore_index -1 : tensor<8x50304xf32>, tensor<8xi32>, tensor<f32>
        -> tensor<f32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$logits, RTX_IndexTensor:$labels,
                       0DTensorOf<[F32, F64]>:$loss_grad,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs 0DTensorOf<[F32, F64]>:$loss,
                      RTX_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad (`ignore_index` $ignore_index^)?
    attr-dict `:` type($logits) `,` type($labels) `,` type($loss_grad) `->`
    type($loss)
  }];
  let hasVerifier = 1;
}

def RTX_MultiAdamWUpdateOp : RTX_FusedOp<"multi_adamw_update", [
    AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "the AdamW steps of several parameters in one launch";
  let description = [{
    For each i, the results of `rtx.adamw_update %params[i], %grads[i],
    %exp_avgs[i], %exp_avg_sqs[i], %step` with these hyper-parameters, bit for
    bit on the CPU: `new_params[i]`, `new_exp_avgs[i]`, `new_exp_avg_sqs[i]`.
    The GPU runs them as one kernel over a table of (tensor, chunk) pairs, as
    apex's and PyTorch's `multi_tensor_apply` do, instead of one launch per
    parameter. All parameters share one element type, and all gradients and
    moments another (f32 moments with f32 or bf16 master weights, or the
    dtype of `rtx.adamw_update`'s rule). Created by `rtx-fuse-adamw` from the
    `rtx.adamw_update` ops of a train step that share `step`, the
    hyper-parameters and the learning-rate schedule (`warmup_steps`,
    `decay_steps`, `min_lr`, as `rtx.adamw_update` defines them; not printed
    when constant) (no sharding rule, no VJP). Cost: 12 FLOPs per element.

    Example:

    ```mlir
    %p:2, %m:2, %v:2 = rtx.multi_adamw_update
        (%p0, %p1) (%g0, %g1) (%m0, %m1) (%v0, %v1) %step
        lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02
        : (tensor<64xf32>, tensor<16xf32>) (tensor<64xf32>, tensor<16xf32>)
          (tensor<64xf32>, tensor<16xf32>) (tensor<64xf32>, tensor<16xf32>),
          tensor<f32>
        -> (tensor<64xf32>, tensor<16xf32>) (tensor<64xf32>, tensor<16xf32>)
          (tensor<64xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Variadic<RTX_FloatTensor>:$params,
                       Variadic<RTX_FloatTensor>:$grads,
                       Variadic<RTX_FloatTensor>:$exp_avgs,
                       Variadic<RTX_FloatTensor>:$exp_avg_sqs,
                       0DTensorOf<[F32]>:$step, F64Attr:$lr, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay,
                       RTX_WarmupStepsAttr:$warmup_steps,
                       RTX_DecayStepsAttr:$decay_steps,
                       RTX_MinLrAttr:$min_lr);
  let results = (outs Variadic<RTX_FloatTensor>:$new_params,
                      Variadic<RTX_FloatTensor>:$new_exp_avgs,
                      Variadic<RTX_FloatTensor>:$new_exp_avg_sqs);
  let assemblyFormat = [{
    `(` $params `)` `(` $grads `)` `(` $exp_avgs `)` `(` $exp_avg_sqs `)`
    $step `lr` $lr `betas` `(` $beta1 `,` $beta2 `)` `eps` $eps
    `weight_decay` $weight_decay
    (`warmup_steps` $warmup_steps^)? (`decay_steps` $decay_steps^)?
    (`min_lr` $min_lr^)?
    attr-dict `:` `(` type($params) `)` `(`
    type($grads) `)` `(` type($exp_avgs) `)` `(` type($exp_avg_sqs) `)`
    `,` type($step) `->`
    `(` type($new_params) `)` `(` type($new_exp_avgs) `)` `(`
    type($new_exp_avg_sqs) `)`
  }];
  let hasVerifier = 1;
}

def RTX_SumSquaresOp : RTX_FusedOp<"sum_squares"> {
  let summary = "the sum of the squares of several tensors, in f32";
  let description = [{
    `sum over i of reduce_sum(convert(inputs[i], f32)^2)`, added in the order
    of the inputs: bit for bit what the per-gradient `rtx.convert`,
    `rtx.mul`, `rtx.reduce` and `rtx.add` chain of a clipped optimizer
    (`rtx-optimizer=clip-norm=...`) computes for the square of the global
    gradient norm. The GPU reads each input once. Created by
    `rtx-fuse-adamw` (no sharding rule, no VJP). Cost: 2 FLOPs per element.

    Example:

    ```mlir
    %s = rtx.sum_squares %g0, %g1 : tensor<64x16xbf16>, tensor<16xf32>
        -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<RTX_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // RTX_DIALECT_RTX_IR_RTXFUSEDOPS_TD
