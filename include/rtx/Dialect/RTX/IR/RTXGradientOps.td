//===- RTXGradientOps.td - ops of the backward pass --------*- tablegen -*-===//
//
// Ops that `rtx-autodiff` emits where a VJP is not a short composition of
// forward ops (normalisations, attention, the loss), plus the optimizer
// updates that `rtx-optimizer` emits. Each has a CPU kernel in librtxrt.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXGRADIENTOPS_TD
#define RTX_DIALECT_RTX_IR_RTXGRADIENTOPS_TD

include "rtx/Dialect/RTX/IR/RTXBase.td"

def RTX_UnaryFn : I32EnumAttr<"UnaryFn",
    "an elementwise function whose derivative rtx.unary_grad applies", [
  I32EnumAttrCase<"Exp", 0, "exp">,
  I32EnumAttrCase<"Log", 1, "log">,
  I32EnumAttrCase<"Sqrt", 2, "sqrt">,
  I32EnumAttrCase<"Rsqrt", 3, "rsqrt">,
  I32EnumAttrCase<"Tanh", 4, "tanh">,
  I32EnumAttrCase<"Sigmoid", 5, "sigmoid">,
  I32EnumAttrCase<"Relu", 6, "relu">,
  I32EnumAttrCase<"Silu", 7, "silu">,
  I32EnumAttrCase<"Gelu", 8, "gelu">,
  I32EnumAttrCase<"GeluTanh", 9, "gelu_tanh">
]> {
  let cppNamespace = "::mlir::rtx";
}
defvar RTX_UnaryFnAttr = RTX_UnaryFn;

def RTX_UnaryGradOp : RTX_ModelOp<"unary_grad", [Pure, Elementwise,
    AllTypesMatch<["input", "result_grad", "input_grad"]>]> {
  let summary = "gradient of an elementwise function: `dy * f'(x)`";
  let description = [{
    Given the forward input `x` and the gradient `dy` of `f(x)`, returns
    `dy * f'(x)` for the function named by `fn` (`gelu` is the exact GELU,
    `gelu_tanh` its tanh approximation). Cost: 6 FLOPs per element.

    Example:

    ```mlir
    %dx = rtx.unary_grad gelu_tanh %x, %dy : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins RTX_UnaryFnAttr:$fn, RTX_FloatTensor:$input,
                       RTX_FloatTensor:$result_grad);
  let results = (outs RTX_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $fn $input `,` $result_grad attr-dict `:` type($input)
  }];
}

def RTX_LayerNormGradOp : RTX_ModelOp<"layernorm_grad", [Pure,
    AllTypesMatch<["input", "result_grad", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad", "bias_grad"]>]> {
  let summary = "gradients of rtx.layernorm";
  let description = [{
    From the forward input `x`, the `scale` and the gradient `dy` of the
    normalised output, returns `dx`, `dscale` and `dbias` (the sum of `dy` over
    the leading dimensions; unused when the layernorm has no bias). Recomputes
    the mean and variance instead of saving them. Cost: 14 FLOPs per element.

    Example:

    ```mlir
    %dx, %dg, %db = rtx.layernorm_grad %x, %g, %dy eps 1.0e-05
        : tensor<8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$scale,
                       RTX_FloatTensor:$result_grad, F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$input_grad, RTX_FloatTensor:$scale_grad,
                      RTX_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $result_grad `eps` $epsilon attr-dict `:`
    type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RTX_RMSNormGradOp : RTX_ModelOp<"rmsnorm_grad", [Pure,
    AllTypesMatch<["input", "result_grad", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad"]>]> {
  let summary = "gradients of rtx.rmsnorm";
  let description = [{
    From the forward input `x`, the `scale` and `dy`, returns `dx` and
    `dscale`. Cost: 10 FLOPs per element.

    Example:

    ```mlir
    %dx, %dg = rtx.rmsnorm_grad %x, %g, %dy eps 1.0e-06
        : tensor<8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$scale,
                       RTX_FloatTensor:$result_grad, F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$input_grad,
                      RTX_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $result_grad `eps` $epsilon attr-dict `:`
    type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RTX_SoftmaxGradOp : RTX_ModelOp<"softmax_grad", [Pure,
    AllTypesMatch<["result", "result_grad", "input_grad"]>]> {
  let summary = "gradient of rtx.softmax from its output";
  let description = [{
    `dx = y * (dy - sum(dy * y, dim))` with the softmax output `y`. Cost: 4
    FLOPs per element.

    Example:

    ```mlir
    %dx = rtx.softmax_grad %y, %dy dim 1 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$result, RTX_FloatTensor:$result_grad,
                       I64Attr:$dim);
  let results = (outs RTX_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result `,` $result_grad `dim` $dim attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_RopeGradOp : RTX_ModelOp<"rope_grad", [Pure,
    AllTypesMatch<["result_grad", "input_grad"]>]> {
  let summary = "gradient of rtx.rope: the inverse rotation";
  let description = [{
    Rotates `dy` by the negated angles of `rtx.rope` with the same `theta`
    and `offset` (a rotation's transpose is its inverse). Cost: 3 FLOPs per
    element.

    Example:

    ```mlir
    %dx = rtx.rope_grad %dy theta 1.0e+04 : tensor<2x8x16x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$result_grad, F64Attr:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs RTX_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $result_grad `theta` $theta attr-dict `:` type($result_grad)
  }];
  let hasVerifier = 1;
}

def RTX_AttentionGradOp : RTX_ModelOp<"attention_grad", [Pure,
    AllTypesMatch<["query", "query_grad", "result_grad"]>,
    AllTypesMatch<["key", "key_grad", "value", "value_grad"]>]> {
  let summary = "gradients of rtx.attention";
  let description = [{
    From the forward operands and the gradient of the attention output,
    returns the gradients of query, key and value (with grouped key/value
    heads, a key/value head's gradient sums over its query heads). The
    probabilities are recomputed, as FlashAttention does, rather than saved.
    Cost: twice the forward's.

    Example:

    ```mlir
    %dq, %dk, %dv = rtx.attention_grad %q, %k, %v, %do causal
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$query, RTX_FloatTensor:$key,
                       RTX_FloatTensor:$value, RTX_FloatTensor:$result_grad,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale);
  let results = (outs RTX_FloatTensor:$query_grad, RTX_FloatTensor:$key_grad,
                      RTX_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result_grad (`causal` $causal^)?
    (`scale` $scale^)? attr-dict `:` type($query) `,` type($key)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the given one, else 1/sqrt(head size).
    double getEffectiveScale();
  }];
}

def RTX_EmbeddingGradOp : RTX_ModelOp<"embedding_grad", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "gradient of rtx.embedding's table (scatter-add)";
  let description = [{
    `dtable[v, :] = sum of dy[..., :] over positions whose id is v`, summed in
    a fixed order. The result type gives the table shape `[V, D]`.

    With `vocab on @mesh [axes]` the result is rank `i`'s vocabulary shard
    (rows `[i * V, (i + 1) * V)` of `n * V`, as in `rtx.embedding`):
    positions whose id another rank owns contribute nothing.

    Example:

    ```mlir
    %dwte = rtx.embedding_grad %tokens, %dy
        : tensor<8x128xi32>, tensor<8x128x768xf32> -> tensor<50257x768xf32>
    %dshard = rtx.embedding_grad %tokens, %dy vocab on @mesh_tp4 ["tp"]
        : tensor<8x128xi32>, tensor<8x128x768xf32> -> tensor<12566x768xf32>
    ```
  }];
  let arguments = (ins RTX_IndexTensor:$ids, RTX_FloatTensor:$result_grad,
                       OptionalAttr<FlatSymbolRefAttr>:$vocab_mesh,
                       OptionalAttr<StrArrayAttr>:$vocab_axes);
  let results = (outs RTX_FloatTensor:$table_grad);
  let assemblyFormat = [{
    $ids `,` $result_grad (`vocab` `on` $vocab_mesh^ $vocab_axes)? attr-dict
    `:` type($ids) `,` type($result_grad) `->` type($table_grad)
  }];
  let hasVerifier = 1;
}

def RTX_CrossEntropyGradOp : RTX_ModelOp<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "gradient of rtx.cross_entropy with respect to the logits";
  let description = [{
    `dlogits[t, :] = dloss * (softmax(logits[t, :]) - onehot(labels[t])) / n`
    for the `n` tokens whose label is not `ignore_index`; zero rows for the
    ignored ones. `dloss` is the scalar gradient of the loss. Cost: 5 FLOPs per
    logit.

    Example:

    ```mlir
    %dlogits = rtx.cross_entropy_grad %logits, %labels, %dloss ignore_index -1
        : tensor<8x50257xf32>, tensor<8xi32>, tensor<f32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$logits, RTX_IndexTensor:$labels,
                       0DTensorOf<[F32, F64]>:$loss_grad,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs RTX_FloatTensor:$logits_grad);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad (`ignore_index` $ignore_index^)?
    attr-dict `:` type($logits) `,` type($labels) `,` type($loss_grad)
  }];
  let hasVerifier = 1;
}

def RTX_PadOp : RTX_ModelOp<"pad", [Pure]> {
  let summary = "pads a tensor with zeros";
  let description = [{
    Adds `low[d]` zeros before and `high[d]` zeros after dimension `d` (the
    gradient of `rtx.slice`).

    Example:

    ```mlir
    %p = rtx.pad %x low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $input `low` $low `high` $high attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def RTX_AdamWUpdateOp : RTX_ModelOp<"adamw_update", [Pure,
    AllTypesMatch<["param", "new_param"]>,
    AllTypesMatch<["grad", "exp_avg", "exp_avg_sq", "new_exp_avg",
                   "new_exp_avg_sq"]>]> {
  let summary = "one AdamW step for one parameter";
  let description = [{
    PyTorch's `torch.optim.AdamW` (decoupled weight decay), with `step` the
    1-based step number t as an f32 scalar and `lr_t` the learning rate of
    step t:

    ```
    p  = p - lr_t * weight_decay * p
    m' = beta1 * m + (1 - beta1) * g
    v' = beta2 * v + (1 - beta2) * g^2
    p' = p - lr_t * (m' / (1 - beta1^t)) / (sqrt(v' / (1 - beta2^t)) + eps)
    ```

    Without a schedule, `lr_t = lr`. `warmup_steps` W > 0 and `decay_steps`
    D > 0 (with D > W) schedule it as nanoGPT and Megatron do, a linear
    warm-up then a cosine decay to `min_lr` (0 <= `min_lr` <= `lr`, set only
    with a decay):

    ```
    t <= W:      lr_t = lr * t / W
    W < t <= D:  lr_t = min_lr + (lr - min_lr) * (1 + cos(pi * (t - W) / (D - W))) / 2
    t > D:       lr_t = min_lr
    ```

    Step W runs at the full `lr` and step D at `min_lr`: nanoGPT's original
    `get_lr(it)` and Megatron's cosine schedule at `it = t`, the number of
    steps done once this one is (they call it with the steps done before
    it, t - 1, so their first step runs at rate 0; docs/training.md
    compares them). The weight decay uses
    `lr_t` too, as `torch.optim.AdamW` under an `lr_scheduler` does.
    Without a schedule the attributes are not printed.

    With mixed precision `param` is the f32 master weight, and the optimizer
    pass converts the result to the bf16 working copy. Cost: 12 FLOPs per
    element.

    Example:

    ```mlir
    %p2, %m2, %v2 = rtx.adamw_update %p, %g, %m, %v, %step
        lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02
        : tensor<64x16xf32>, tensor<64x16xf32>, tensor<f32>
    %p3, %m3, %v3 = rtx.adamw_update %p, %g, %m, %v, %step
        lr 6.0e-04 betas(9.0e-01, 9.5e-01) eps 1.0e-08 weight_decay 1.0e-01
        warmup_steps 100 decay_steps 5000 min_lr 6.0e-05
        : tensor<64x16xf32>, tensor<64x16xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$param, RTX_FloatTensor:$grad,
                       RTX_FloatTensor:$exp_avg, RTX_FloatTensor:$exp_avg_sq,
                       0DTensorOf<[F32]>:$step, F64Attr:$lr, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay,
                       RTX_WarmupStepsAttr:$warmup_steps,
                       RTX_DecayStepsAttr:$decay_steps,
                       RTX_MinLrAttr:$min_lr);
  let results = (outs RTX_FloatTensor:$new_param, RTX_FloatTensor:$new_exp_avg,
                      RTX_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `lr` $lr
    `betas` `(` $beta1 `,` $beta2 `)` `eps` $eps `weight_decay` $weight_decay
    (`warmup_steps` $warmup_steps^)? (`decay_steps` $decay_steps^)?
    (`min_lr` $min_lr^)?
    attr-dict `:` type($param) `,` type($grad) `,` type($step)
  }];
  let hasVerifier = 1;
}

def RTX_SGDUpdateOp : RTX_ModelOp<"sgd_update", [Pure,
    AllTypesMatch<["param", "new_param"]>]> {
  let summary = "one SGD step for one parameter";
  let description = [{
    `p' = p - lr * (g + weight_decay * p)`, computed in the gradient's
    precision. Cost: 3 FLOPs per element.

    Example:

    ```mlir
    %p2 = rtx.sgd_update %p, %g lr 1.0e-01 weight_decay 0.0
        : tensor<64x16xf32>, tensor<64x16xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$param, RTX_FloatTensor:$grad,
                       F64Attr:$lr, F64Attr:$weight_decay);
  let results = (outs RTX_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `lr` $lr `weight_decay` $weight_decay attr-dict `:`
    type($param) `,` type($grad)
  }];
  let hasVerifier = 1;
}

#endif // RTX_DIALECT_RTX_IR_RTXGRADIENTOPS_TD
