//===- RTXModelOps.td - rtx model ops ----------------------*- tablegen -*-===//
//
// Ops that describe a model on ranked tensors. Shapes are global before
// `rtx-partition` and per-rank after it.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXMODELOPS_TD
#define RTX_DIALECT_RTX_IR_RTXMODELOPS_TD

include "rtx/Dialect/RTX/IR/RTXBase.td"

//===----------------------------------------------------------------------===//
// Values that enter the model
//===----------------------------------------------------------------------===//

def RTX_ParamOp : RTX_SourceOp<"param"> {
  let summary = "declares a trainable parameter";
  let description = [{
    Declares a trainable parameter by name (PyTorch module paths are kept, for
    example `transformer.h.0.attn.c_attn.weight`), with its shape, element type
    and initializer. Random initial values are drawn from a counter-based
    generator keyed by (`seed`, name, element index): the same value whatever
    the rank layout. `seed` defaults to 0. Names are unique within a function.

    Example:

    ```mlir
    %w = rtx.param "h.0.mlp.c_fc.weight" normal(0.0, 0.02) seed 7
        : tensor<3072x768xf32>
    %b = rtx.param "h.0.mlp.c_fc.bias" zeros : tensor<3072xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, RTX_InitAttr:$init,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $name custom<Initializer>($init) (`seed` $seed^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The seed of the counter-based generator (0 unless given).
    int64_t getEffectiveSeed() { return getSeed().value_or(0); }
  }];
}

def RTX_InputOp : RTX_SourceOp<"input"> {
  let summary = "declares a named model input (a batch of data)";
  let description = [{
    A named input of the model, such as token ids or labels. `rtx-run` reads it
    from `NAME.npy`. Names are unique within a function.

    Example:

    ```mlir
    %tokens = rtx.input "tokens" : tensor<8x128xi32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def RTX_ConstantOp : RTX_SourceOp<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor of constant values.

    Example:

    ```mlir
    %c = rtx.constant dense<1.0> : tensor<4x8xf32>
    %mask = rtx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def RTX_MatmulOp : RTX_DifferentiableOp<"matmul", [Pure]> {
  let summary = "matrix product of two matrices";
  let description = [{
    `result = op(lhs) * op(rhs)` where `op` transposes its operand when the
    matching flag is set. Shapes: `[M, K] x [K, N] -> [M, N]` after the
    transposes. Cost: `2*M*N*K` FLOPs.

    Example:

    ```mlir
    %c = rtx.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %d = rtx.matmul %a, %e transpose_rhs
        : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$lhs, RTX_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_BatchMatmulOp : RTX_DifferentiableOp<"batch_matmul", [Pure]> {
  let summary = "batched matrix product";
  let description = [{
    A matrix product over the last two dimensions for every index of the
    leading (batch) dimensions, which must be equal in both operands:
    `[B..., M, K] x [B..., K, N] -> [B..., M, N]` after the optional transposes
    of the last two dimensions. Cost: `2*B*M*N*K` FLOPs.

    Example:

    ```mlir
    %s = rtx.batch_matmul %q, %k transpose_rhs
        : tensor<2x12x64x32xf32>, tensor<2x12x64x32xf32> -> tensor<2x12x64x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$lhs, RTX_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_LinearOp : RTX_DifferentiableOp<"linear", [Pure]> {
  let summary = "affine map over the last dimension (torch.nn.Linear)";
  let description = [{
    `result = input * weight^T + bias` over the last dimension, with the weight
    stored as PyTorch stores it: `[out_features, in_features]`. Shapes:
    `[..., in] x [out, in] (+ [out]) -> [..., out]`. Cost: `2*T*in*out` FLOPs
    (plus `T*out` with a bias), `T` the product of the leading dimensions.

    Example:

    ```mlir
    %y = rtx.linear %x, %w, %b
        : tensor<8x128x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>
          -> tensor<8x128x3072xf32>
    %z = rtx.linear %x, %w : tensor<8x768xf32>, tensor<50257x768xf32>
          -> tensor<8x50257xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$weight,
                       Optional<RTX_FloatTensor>:$bias);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_GemmEpilogueOp : RTX_Op<"gemm_epilogue", [Pure,
    AttrSizedOperandSegments, RTX_Kernel,
    DeclareOpInterfaceMethods<RTX_CostOpInterface, ["getFlops",
        "getContractionShape", "isContractionLhsTransposed"]>]> {
  let summary = "a matrix product fused with its epilogue (bias + GELU, bias gradient, GELU gradient)";
  let description = [{
    `P = op(lhs) * op(rhs)` followed by the `epilogue`, in one kernel: on a
    GPU one cuBLASLt matmul with the matching `CUBLASLT_EPILOGUE_*`, so the
    product is not written to memory and read back by the elementwise op
    that follows it. `rtx-fuse-epilogues` writes this op from the unfused
    ops of a train step; it computes exactly what they compute (each
    intermediate rounded to the element type as the unfused ops round it),
    up to the order of float operations.

    Shapes: without `transpose_lhs`, lhs is `[..., K]` and its leading
    dimensions (M of them in all) are kept in the result; with it, lhs is
    `[K, M]`. rhs is `[K, N]`, or `[N, K]` with `transpose_rhs`. The result
    is `lhs.shape[:-1] + [N]` (`[M, N]` with `transpose_lhs`). All operands
    and results share one element type.

    | epilogue | operands | results |
    |---|---|---|
    | `bias_gelu`, `bias_gelu_tanh` | `bias` `[N]` | `gelu(P + bias)` |
    | `bias_gelu_aux`, `bias_gelu_tanh_aux` | `bias` `[N]` | `gelu(P + bias)`, and `aux = P + bias` (the pre-activation the backward pass reads; `CUBLASLT_EPILOGUE_GELU_AUX_BIAS`) |
    | `bias_grad` | | `P`, and `aux[m] = sum_k op(lhs)[m, k]`: with `lhs = dY` `[T, N_out]` and `transpose_lhs`, the weight gradient `dY^T X` and the bias gradient (`CUBLASLT_EPILOGUE_BGRADB`) |
    | `dgelu`, `dgelu_tanh` | `pre` (the result's shape) | `P * gelu'(pre)`: the gradient through a GELU (`CUBLASLT_EPILOGUE_DGELU`) |

    `gelu` is the exact (erf) GELU and `gelu_tanh` its tanh approximation, as
    in `rtx.gelu` and `rtx.unary_grad`. cuBLASLt's epilogues compute the tanh
    form only: for the erf form the GPU runs the product with its bias
    epilogue and the GELU as its own kernel.

    The op has no sharding rule and no VJP: it is written after autodiff and
    partitioning, on per-rank programs, as the last pass before codegen.
    Cost: `2*M*N*K` FLOPs plus 8 per result element for a GELU, 1 for a bias
    and `M*K` for a bias gradient.

    Example:

    ```mlir
    %h, %pre = rtx.gemm_epilogue bias_gelu_tanh_aux %x, %w bias %b transpose_rhs
        : (tensor<2x16x32xf32>, tensor<128x32xf32>, tensor<128xf32>)
          -> (tensor<2x16x128xf32>, tensor<2x16x128xf32>)
    %dw, %db = rtx.gemm_epilogue bias_grad %dy, %x transpose_lhs
        : (tensor<32x128xf32>, tensor<32x64xf32>)
          -> (tensor<128x64xf32>, tensor<128xf32>)
    %dh = rtx.gemm_epilogue dgelu_tanh %dy, %w pre %pre
        : (tensor<32x64xf32>, tensor<64x128xf32>, tensor<32x128xf32>)
          -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins RTX_GemmEpilogueAttr:$epilogue, RTX_FloatTensor:$lhs,
                       RTX_FloatTensor:$rhs, Optional<RTX_FloatTensor>:$bias,
                       Optional<RTX_FloatTensor>:$pre,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs RTX_FloatTensor:$result,
                      Optional<RTX_FloatTensor>:$aux);
  let assemblyFormat = [{
    $epilogue $lhs `,` $rhs (`bias` $bias^)? (`pre` $pre^)?
    (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def RTX_AddOp : RTX_BinaryOp<"add", "Add", [Commutative, RTX_PassesPartialSums]> {
  let summary = "elementwise sum";
  let description = [{
    Elementwise `lhs + rhs` on operands of one type; broadcast first with
    `rtx.broadcast`.

    Example:

    ```mlir
    %z = rtx.add %x, %y : tensor<4x8xf32>
    ```
  }];
}
def RTX_SubOp : RTX_BinaryOp<"sub", "Sub", [RTX_PassesPartialSums]> {
  let summary = "elementwise difference";
  let description = [{
    Elementwise `lhs - rhs`.

    Example:

    ```mlir
    %z = rtx.sub %x, %y : tensor<4x8xf32>
    ```
  }];
}
def RTX_MulOp : RTX_BinaryOp<"mul", "Mul", [Commutative]> {
  let summary = "elementwise product";
  let description = [{
    Elementwise `lhs * rhs`.

    Example:

    ```mlir
    %z = rtx.mul %x, %y : tensor<4x8xf32>
    ```
  }];
}
def RTX_DivOp : RTX_BinaryOp<"div", "Div"> {
  let summary = "elementwise quotient";
  let description = [{
    Elementwise `lhs / rhs`.

    Example:

    ```mlir
    %z = rtx.div %x, %y : tensor<4x8xf32>
    ```
  }];
}
def RTX_MaximumOp : RTX_BinaryOp<"maximum", "Maximum", [Commutative]> {
  let summary = "elementwise maximum";
  let description = [{
    Elementwise `max(lhs, rhs)`.

    Example:

    ```mlir
    %z = rtx.maximum %x, %y : tensor<4x8xf32>
    ```
  }];
}
def RTX_MinimumOp : RTX_BinaryOp<"minimum", "Minimum", [Commutative]> {
  let summary = "elementwise minimum";
  let description = [{
    Elementwise `min(lhs, rhs)`.

    Example:

    ```mlir
    %z = rtx.minimum %x, %y : tensor<4x8xf32>
    ```
  }];
}

def RTX_NegOp : RTX_UnaryOp<"neg", 1, "Neg", [RTX_PassesPartialSums]> {
  let summary = "elementwise negation";
  let description = [{
    Example:

    ```mlir
    %y = rtx.neg %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_ExpOp : RTX_UnaryOp<"exp", 1, "Exp"> {
  let summary = "elementwise exponential";
  let description = [{
    Example:

    ```mlir
    %y = rtx.exp %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_LogOp : RTX_UnaryOp<"log", 1, "Log"> {
  let summary = "elementwise natural logarithm";
  let description = [{
    Example:

    ```mlir
    %y = rtx.log %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_SqrtOp : RTX_UnaryOp<"sqrt", 1, "Sqrt"> {
  let summary = "elementwise square root";
  let description = [{
    Example:

    ```mlir
    %y = rtx.sqrt %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_RsqrtOp : RTX_UnaryOp<"rsqrt", 2, "Rsqrt"> {
  let summary = "elementwise reciprocal square root";
  let description = [{
    Example:

    ```mlir
    %y = rtx.rsqrt %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_TanhOp : RTX_UnaryOp<"tanh", 1, "Tanh"> {
  let summary = "elementwise hyperbolic tangent";
  let description = [{
    Example:

    ```mlir
    %y = rtx.tanh %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_SigmoidOp : RTX_UnaryOp<"sigmoid", 3, "Sigmoid"> {
  let summary = "elementwise logistic sigmoid `1 / (1 + exp(-x))`";
  let description = [{
    Example:

    ```mlir
    %y = rtx.sigmoid %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_ReluOp : RTX_UnaryOp<"relu", 1, "Relu"> {
  let summary = "elementwise `max(x, 0)`";
  let description = [{
    Example:

    ```mlir
    %y = rtx.relu %x : tensor<4x8xf32>
    ```
  }];
}
def RTX_SiluOp : RTX_UnaryOp<"silu", 4, "Silu"> {
  let summary = "elementwise `x * sigmoid(x)` (SiLU / swish)";
  let description = [{
    Example:

    ```mlir
    %y = rtx.silu %x : tensor<4x8xf32>
    ```
  }];
}

def RTX_SwiGLUOp : RTX_DifferentiableOp<"swiglu",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "Llama's gated linear unit: `silu(gate) * up`, fused";
  let description = [{
    `result[i] = gate[i] * sigmoid(gate[i]) * up[i]`: the activation of
    Llama's MLP, `down(silu(gate(x)) * up(x))`, in one pass over memory
    instead of three (silu, its result written and read back, the product).
    `gate` and `up` have one shape and float type. Elementwise, so every
    sharding passes through it; under tensor parallelism both projections are
    column-parallel and the op runs on each rank's columns.

    Example:

    ```mlir
    %h = rtx.swiglu %gate, %up : tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$gate, RTX_FloatTensor:$up);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::rtx::OpShardingRule $cppClass::getShardingRule() {
      return ::mlir::rtx::getElementwiseShardingRule(getOperation());
    }
    // silu (4 per element) and the product.
    int64_t $cppClass::getFlops() { return 5 * getType().getNumElements(); }
  }];
}

def RTX_GeluOp : RTX_DifferentiableOp<"gelu",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise GELU, exact or tanh-approximated";
  let description = [{
    `x * Phi(x)` with the Gaussian CDF `Phi`; with `approximate`, the tanh
    approximation `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`
    (PyTorch's `approximate='tanh'`, GPT-2's `new_gelu`).

    Example:

    ```mlir
    %y = rtx.gelu %x : tensor<4x8xf32>
    %z = rtx.gelu %x approximate : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, UnitAttr:$approximate);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` $approximate^)? attr-dict `:` type($result)
  }];
}

def RTX_ConvertOp : RTX_DifferentiableOp<"convert", [Pure, Elementwise,
    SameOperandsAndResultShape]> {
  let summary = "elementwise element type conversion";
  let description = [{
    Converts every element to the result's element type (f32 <-> bf16 for mixed
    precision, integer <-> float). Floats round to nearest even.

    Example:

    ```mlir
    %h = rtx.convert %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  // Folds a convert to the input's own type, and a round trip through an
  // exactly widening type (bf16 -> f32 -> bf16, which mixed precision's f32
  // gradient accumulation leaves around bf16 values) to its input.
  let hasFolder = 1;
}

def RTX_CompareOp : RTX_DifferentiableOp<"compare", [Pure, Elementwise,
    SameTypeOperands, SameOperandsAndResultShape]> {
  let summary = "elementwise comparison producing a mask";
  let description = [{
    Compares two tensors of one type elementwise with `eq`, `ne`, `lt`, `le`,
    `gt` or `ge`, giving an `i1` mask.

    Example:

    ```mlir
    %m = rtx.compare eq, %bias, %zero : tensor<8x8xf32> -> tensor<8x8xi1>
    ```
  }];
  let arguments = (ins RTX_ComparePredicateAttr:$predicate, RTX_Tensor:$lhs,
                       RTX_Tensor:$rhs);
  let results = (outs RTX_MaskTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)
  }];
}

def RTX_WhereOp : RTX_DifferentiableOp<"where", [Pure, Elementwise,
    AllTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "elementwise select by a mask";
  let description = [{
    `result[i] = condition[i] ? on_true[i] : on_false[i]`. All operands have
    one shape; broadcast first.

    Example:

    ```mlir
    %y = rtx.where %mask, %x, %neg_inf : tensor<8x8xi1>, tensor<8x8xf32>
    ```
  }];
  let arguments = (ins RTX_MaskTensor:$condition, RTX_Tensor:$on_true,
                       RTX_Tensor:$on_false);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($result)
  }];
}

def RTX_MaskedFillOp : RTX_DifferentiableOp<"masked_fill", [Pure, Elementwise,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "replace masked elements by a constant";
  let description = [{
    `result[i] = mask[i] ? value : input[i]` (torch's `masked_fill`). The mask
    has the input's shape; broadcast it first. `value` may be infinite.

    Example:

    ```mlir
    %y = rtx.masked_fill %scores, %mask, 0xFFF0000000000000
        : tensor<2x4x8x8xf32>, tensor<2x4x8x8xi1>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_MaskTensor:$mask,
                       F64Attr:$value);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $mask `,` $value attr-dict `:` type($input) `,` type($mask)
  }];
}

def RTX_DropoutOp : RTX_DifferentiableOp<"dropout",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "seeded, deterministic dropout";
  let description = [{
    Zeroes each element with probability `rate` and scales the rest by
    `1 / (1 - rate)`. The mask comes from a counter-based generator keyed by
    (`seed`, element index of the global tensor), so it is the same whatever
    the rank layout. `rate` is in [0, 1).

    Example:

    ```mlir
    %y = rtx.dropout %x rate 0.1 seed 42 : tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, F64Attr:$rate, I64Attr:$seed);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `rate` $rate `seed` $seed attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, attention
//===----------------------------------------------------------------------===//

def RTX_LayerNormOp : RTX_DifferentiableOp<"layernorm", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale (+ bias)`, with the mean and the
    biased variance over the last dimension; `scale` and the optional `bias`
    have the last dimension's size. Cost: 7 FLOPs per element (mean, variance,
    normalise, scale) plus 1 with a bias.

    Example:

    ```mlir
    %y = rtx.layernorm %x, %g, %b eps 1.0e-05
        : tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>
    %z = rtx.layernorm %x, %g eps 1.0e-05 : tensor<8x128x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$scale,
                       Optional<RTX_FloatTensor>:$bias, F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? `eps` $epsilon attr-dict `:` type($input)
    `,` type($scale) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def RTX_RMSNormOp : RTX_DifferentiableOp<"rmsnorm", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "root-mean-square normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale` over the last dimension (Llama).
    Cost: 5 FLOPs per element.

    Example:

    ```mlir
    %y = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, RTX_FloatTensor:$scale,
                       F64Attr:$epsilon);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `eps` $epsilon attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def RTX_SoftmaxOp : RTX_DifferentiableOp<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one dimension";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `dim` (numerically stable). Cost:
    5 FLOPs per element.

    Example:

    ```mlir
    %p = rtx.softmax %scores dim 3 : tensor<2x12x64x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, I64Attr:$dim);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def RTX_RopeOp : RTX_DifferentiableOp<"rope", [Pure, SameOperandsAndResultType]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of features by a position-dependent angle (RoPE). The input
    is `[B, H, S, D]` (heads before sequence, as attention takes it) with an even
    head size `D`; feature `i` pairs with `i + D/2` (the "rotate half" layout of
    GPT-NeoX and Hugging Face Llama). Position `s` (plus `offset`) rotates pair
    `i` by `s * theta^(-2i/D)`. Cost: 3 FLOPs per element.

    Example:

    ```mlir
    %q2 = rtx.rope %q theta 1.0e+04 : tensor<2x8x16x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$input, F64Attr:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = "$input `theta` $theta attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def RTX_AttentionOp : RTX_DifferentiableOp<"attention", [Pure]> {
  let summary = "scaled dot-product attention over heads, optionally causal";
  let description = [{
    `softmax(q k^T * scale [+ causal mask]) v` per batch and head. Shapes:
    query `[B, Hq, Sq, D]`, key and value `[B, Hkv, Skv, D]`, result
    `[B, Hq, Sq, D]`. Grouped key/value heads: `Hq` is a multiple of `Hkv`,
    query head `h` reads key/value head `h / (Hq / Hkv)` (multi-query attention
    when `Hkv = 1`). `causal` lets position `i` see positions `<= i` and needs
    `Sq = Skv`. `scale` defaults to `1/sqrt(D)`.
    Cost: `4*B*Hq*P*D` FLOPs for the two products plus `5*B*Hq*P` for the
    softmax, where `P` is the number of (query, key) pairs computed:
    `Sq*Skv`, or `Sq*(Sq+1)/2` when causal.

    Example:

    ```mlir
    %o = rtx.attention %q, %k, %v causal
        : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
          -> tensor<2x8x16x64xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$query, RTX_FloatTensor:$key,
                       RTX_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`causal` $causal^)? (`scale` $scale^)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the given one, else 1/sqrt(head size).
    double getEffectiveScale();
  }];
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

def RTX_EmbeddingOp : RTX_DifferentiableOp<"embedding", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "looks up rows of a table by index";
  let description = [{
    `result[..., :] = table[ids[...], :]` with a table `[V, D]` and integer ids
    of any shape; the result is `ids.shape + [D]`. An id outside `[0, V)` is an
    error at run time.

    With `vocab on @mesh [axes]` (written by `rtx-partition`, Megatron's
    vocab-parallel embedding) the table is one of `n` vocabulary shards over
    `axes`: rank `i` of the group holds the rows `[i * V, (i + 1) * V)` of a
    vocabulary of `n * V`, ids it does not own give zero rows, and the
    result is a partial sum over `axes`.

    Example:

    ```mlir
    %x = rtx.embedding %wte, %tokens
        : tensor<50257x768xf32>, tensor<8x128xi32> -> tensor<8x128x768xf32>
    %y = rtx.embedding %wte_shard, %tokens vocab on @mesh_tp4 ["tp"]
        : tensor<12566x768xf32>, tensor<8x128xi32> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$table, RTX_IndexTensor:$ids,
                       OptionalAttr<FlatSymbolRefAttr>:$vocab_mesh,
                       OptionalAttr<StrArrayAttr>:$vocab_axes);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids (`vocab` `on` $vocab_mesh^ $vocab_axes)? attr-dict `:`
    type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_CrossEntropyOp : RTX_DifferentiableOp<"cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy, mean over tokens";
  let description = [{
    `mean over tokens t with labels[t] != ignore_index of
    (logsumexp(logits[t, :]) - logits[t, labels[t]])`, with logits `[..., V]`
    and integer labels of the leading shape. The result is an f32 scalar
    (0 when every label is ignored). Cost: 6 FLOPs per logit.

    Example:

    ```mlir
    %loss = rtx.cross_entropy %logits, %labels ignore_index -1
        : tensor<8x128x50257xf32>, tensor<8x128xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins RTX_FloatTensor:$logits, RTX_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs 0DTensorOf<[F32, F64]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`ignore_index` $ignore_index^)? attr-dict `:`
    type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def RTX_ReshapeOp : RTX_DifferentiableOp<"reshape", [Pure, RTX_PassesPartialSums,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "same elements, another shape (row-major)";
  let description = [{
    Reinterprets the elements in row-major order under a new shape with the
    same number of elements and element type. Head splits such as
    `[B, S, H*D] -> [B, S, H, D]` keep their meaning for sharding: the sharding
    rule factors `H*D` into `H` and `D`. Its kernel moves no data: the result
    is a view of the input's buffer (ViewLikeOpInterface, which the memory
    planner follows).

    Example:

    ```mlir
    %h = rtx.reshape %x : tensor<8x128x768xf32> -> tensor<8x128x12x64xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def RTX_TransposeOp : RTX_DifferentiableOp<"transpose", [Pure, RTX_PassesPartialSums]> {
  let summary = "permutes dimensions";
  let description = [{
    `result.shape[i] = input.shape[permutation[i]]`.

    Example:

    ```mlir
    %t = rtx.transpose %x [0, 2, 1, 3]
        : tensor<8x128x12x64xf32> -> tensor<8x12x128x64xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_SliceOp : RTX_DifferentiableOp<"slice", [Pure]> {
  let summary = "a contiguous box of a tensor";
  let description = [{
    Takes `[start, limit)` along every dimension (unit stride).

    Example:

    ```mlir
    %s = rtx.slice %bias [0:1, 0:1, 0:16, 0:16]
        : tensor<1x1x64x64xf32> -> tensor<1x1x16x16xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $input ` ` `[` custom<SliceRanges>($starts, $limits) `]` attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_SplitOp : RTX_DifferentiableOp<"split", [Pure]> {
  let summary = "splits a tensor into consecutive pieces along one dimension";
  let description = [{
    The results' sizes along `dim` add up to the input's; every other
    dimension is unchanged. GPT-2 splits its fused q/k/v projection this way.

    Example:

    ```mlir
    %q, %k, %v = rtx.split %qkv dim 2 : tensor<8x128x2304xf32>
        -> tensor<8x128x768xf32>, tensor<8x128x768xf32>, tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, I64Attr:$dim);
  let results = (outs Variadic<RTX_Tensor>:$results);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
}

def RTX_ConcatOp : RTX_DifferentiableOp<"concat", [Pure]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    All inputs have one element type and equal sizes except along `dim`,
    where the result's size is the sum.

    Example:

    ```mlir
    %c = rtx.concat %a, %b dim 1
        : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
    ```
  }];
  let arguments = (ins Variadic<RTX_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_BroadcastOp : RTX_DifferentiableOp<"broadcast", [Pure]> {
  let summary = "explicit broadcast to a larger shape";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]` (strictly
    increasing); its size equals the result's or is 1 (then it is repeated).
    Result dimensions not named in `dims` are new and repeat the operand.

    Example:

    ```mlir
    %b = rtx.broadcast %bias dims [2] : tensor<768xf32> -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins RTX_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs RTX_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def RTX_ReduceOp : RTX_DifferentiableOp<"reduce", [Pure]> {
  let summary = "sum, mean, max or min over dimensions";
  let description = [{
    Reduces the listed dimensions (strictly increasing). With `keepdim` they
    stay as size 1, otherwise they are removed. Cost: 1 FLOP per input element.

    Example:

    ```mlir
    %s = rtx.reduce sum %x dims [1] : tensor<4x8xf32> -> tensor<4xf32>
    %m = rtx.reduce max %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins RTX_ReductionKindAttr:$kind, RTX_FloatTensor:$input,
                       DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // RTX_DIALECT_RTX_IR_RTXMODELOPS_TD
