// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Backward-pass and optimizer ops: rtx.unary_grad, rtx.layernorm_grad,
// rtx.rmsnorm_grad, rtx.softmax_grad, rtx.rope_grad, rtx.attention_grad,
// rtx.embedding_grad, rtx.cross_entropy_grad, rtx.pad, rtx.adamw_update,
// rtx.sgd_update.

//===----------------------------------------------------------------------===//
// rtx.unary_grad
//===----------------------------------------------------------------------===//

func.func @unary_grad_unknown_fn(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'fn' [exp, log, sqrt, rsqrt, tanh, sigmoid, relu, silu, gelu, gelu_tanh]}}
  %0 = rtx.unary_grad neg %x, %x : tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

// The generic form stores the function as its i32 value; 10 is none.
func.func @unary_grad_fn_out_of_range(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{invalid properties {fn = 10 : i32} for op rtx.unary_grad: Invalid attribute `fn` in property conversion: 10 : i32}}
  %0 = "rtx.unary_grad"(%x, %x) <{fn = 10 : i32}> : (tensor<7x13xf32>, tensor<7x13xf32>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @unary_grad_result_grad_type(%x: tensor<7x13xf32>, %dy: tensor<7x13xbf16>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.unary_grad' op failed to verify that all of {input, result_grad, input_grad} have same type}}
  %0 = "rtx.unary_grad"(%x, %dy) <{fn = 0 : i32}> : (tensor<7x13xf32>, tensor<7x13xbf16>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @unary_grad_result_shape(%x: tensor<7x13xf32>) -> tensor<13x7xf32> {
  // expected-error @+1 {{'rtx.unary_grad' op failed to verify that all of {input, result_grad, input_grad} have same type}}
  %0 = "rtx.unary_grad"(%x, %x) <{fn = 4 : i32}> : (tensor<7x13xf32>, tensor<7x13xf32>) -> tensor<13x7xf32>
  return %0 : tensor<13x7xf32>
}

// -----

func.func @unary_grad_integer_input(%x: tensor<7x13xi32>) -> tensor<7x13xi32> {
  // expected-error @+1 {{'rtx.unary_grad' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7x13xi32>'}}
  %0 = rtx.unary_grad relu %x, %x : tensor<7x13xi32>
  return %0 : tensor<7x13xi32>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.layernorm_grad
//===----------------------------------------------------------------------===//

func.func @layernorm_grad_scalar_input(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op input must have rank at least 1}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps 1.0e-05 : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @layernorm_grad_negative_epsilon(%x: tensor<7x65xf32>, %g: tensor<65xf32>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op epsilon must be non-negative, got -1.000000e-05}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps -1.0e-05 : tensor<7x65xf32>, tensor<65xf32>
  return
}

// -----

func.func @layernorm_grad_nan_epsilon(%x: tensor<7x65xf32>, %g: tensor<65xf32>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op epsilon must be non-negative, got nan}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps 0x7FF8000000000000 : tensor<7x65xf32>, tensor<65xf32>
  return
}

// -----

func.func @layernorm_grad_scale_shape(%x: tensor<7x65xf32>, %g: tensor<7xf32>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op scale shape [7] must be [65], the input's last dimension}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps 1.0e-05 : tensor<7x65xf32>, tensor<7xf32>
  return
}

// -----

func.func @layernorm_grad_scale_element_type(%x: tensor<7x65xf32>, %g: tensor<65xbf16>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op input element type 'f32' differs from scale element type 'bf16'}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps 1.0e-05 : tensor<7x65xf32>, tensor<65xbf16>
  return
}

// -----

func.func @layernorm_grad_result_grad_type(%x: tensor<7x65xf32>, %g: tensor<65xf32>, %dy: tensor<7x65xbf16>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op failed to verify that all of {input, result_grad, input_grad} have same type}}
  %0:3 = "rtx.layernorm_grad"(%x, %g, %dy) <{epsilon = 1.0e-05 : f64}> : (tensor<7x65xf32>, tensor<65xf32>, tensor<7x65xbf16>) -> (tensor<7x65xf32>, tensor<65xf32>, tensor<65xf32>)
  return
}

// -----

func.func @layernorm_grad_bias_grad_type(%x: tensor<7x65xf32>, %g: tensor<65xf32>) {
  // expected-error @+1 {{'rtx.layernorm_grad' op failed to verify that all of {scale, scale_grad, bias_grad} have same type}}
  %0:3 = "rtx.layernorm_grad"(%x, %g, %x) <{epsilon = 1.0e-05 : f64}> : (tensor<7x65xf32>, tensor<65xf32>, tensor<7x65xf32>) -> (tensor<7x65xf32>, tensor<65xf32>, tensor<1x65xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.rmsnorm_grad
//===----------------------------------------------------------------------===//

func.func @rmsnorm_grad_scalar_input(%x: tensor<f16>, %g: tensor<1xf16>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op input must have rank at least 1}}
  %0:2 = rtx.rmsnorm_grad %x, %g, %x eps 1.0e-05 : tensor<f16>, tensor<1xf16>
  return
}

// -----

func.func @rmsnorm_grad_negative_epsilon(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op epsilon must be non-negative, got -5.000000e-01}}
  %0:2 = rtx.rmsnorm_grad %x, %g, %x eps -0.5 : tensor<2x13x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rmsnorm_grad_scale_shape(%x: tensor<2x13x64xf32>, %g: tensor<1x64xf32>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op scale shape [1, 64] must be [64], the input's last dimension}}
  %0:2 = rtx.rmsnorm_grad %x, %g, %x eps 1.0e-06 : tensor<2x13x64xf32>, tensor<1x64xf32>
  return
}

// -----

func.func @rmsnorm_grad_scale_element_type(%x: tensor<2x13x64xf32>, %g: tensor<64xf64>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op input element type 'f32' differs from scale element type 'f64'}}
  %0:2 = rtx.rmsnorm_grad %x, %g, %x eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf64>
  return
}

// -----

func.func @rmsnorm_grad_input_grad_type(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op failed to verify that all of {input, result_grad, input_grad} have same type}}
  %0:2 = "rtx.rmsnorm_grad"(%x, %g, %x) <{epsilon = 1.0e-06 : f64}> : (tensor<2x13x64xf32>, tensor<64xf32>, tensor<2x13x64xf32>) -> (tensor<2x13x64xf16>, tensor<64xf32>)
  return
}

// -----

func.func @rmsnorm_grad_scale_grad_type(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{'rtx.rmsnorm_grad' op failed to verify that all of {scale, scale_grad} have same type}}
  %0:2 = "rtx.rmsnorm_grad"(%x, %g, %x) <{epsilon = 1.0e-06 : f64}> : (tensor<2x13x64xf32>, tensor<64xf32>, tensor<2x13x64xf32>) -> (tensor<2x13x64xf32>, tensor<13xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.softmax_grad
//===----------------------------------------------------------------------===//

func.func @softmax_grad_dim_out_of_range(%y: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.softmax_grad' op dim 2 is out of range for a tensor of rank 2}}
  %0 = rtx.softmax_grad %y, %y dim 2 : tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @softmax_grad_negative_dim(%y: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.softmax_grad' op dim -1 is out of range for a tensor of rank 2}}
  %0 = rtx.softmax_grad %y, %y dim -1 : tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @softmax_grad_scalar(%y: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.softmax_grad' op dim 0 is out of range for a tensor of rank 0}}
  %0 = rtx.softmax_grad %y, %y dim 0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_grad_result_grad_type(%y: tensor<7x13xf32>, %dy: tensor<7x13xf16>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.softmax_grad' op failed to verify that all of {result, result_grad, input_grad} have same type}}
  %0 = "rtx.softmax_grad"(%y, %dy) <{dim = 1 : i64}> : (tensor<7x13xf32>, tensor<7x13xf16>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.rope_grad
//===----------------------------------------------------------------------===//

// Regression test (fixed): rtx.rope_grad has no verifier, so it accepts what rtx.rope
// rejects (a rank other than 4, an odd head_dim, theta <= 0, a negative
// offset). Only the ODS-level checks are tested here.

func.func @rope_grad_result_type(%dy: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xbf16> {
  // expected-error @+1 {{'rtx.rope_grad' op failed to verify that all of {result_grad, input_grad} have same type}}
  %0 = "rtx.rope_grad"(%dy) <{theta = 1.0e+04 : f64}> : (tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xbf16>
  return %0 : tensor<2x8x13x64xbf16>
}

// -----

func.func @rope_grad_missing_theta(%dy: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.rope_grad' op requires attribute 'theta'}}
  %0 = "rtx.rope_grad"(%dy) : (tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.attention_grad
//===----------------------------------------------------------------------===//

func.func @attention_grad_rank3_query(%q: tensor<8x13x64xf32>, %k: tensor<1x8x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query and key must be [batch, heads, seq, head_dim], got ranks 3 and 4}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<8x13x64xf32>, tensor<1x8x13x64xf32>
  return
}

// -----

func.func @attention_grad_rank3_key(%q: tensor<1x8x13x64xf32>, %k: tensor<8x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query and key must be [batch, heads, seq, head_dim], got ranks 4 and 3}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<1x8x13x64xf32>, tensor<8x13x64xf32>
  return
}

// -----

func.func @attention_grad_batch(%q: tensor<2x8x13x64xf32>, %k: tensor<3x8x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query [2, 8, 13, 64] and key [3, 8, 13, 64] do not match as in rtx.attention}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<2x8x13x64xf32>, tensor<3x8x13x64xf32>
  return
}

// -----

func.func @attention_grad_head_dim(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x32xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query [2, 8, 13, 64] and key [2, 8, 13, 32] do not match as in rtx.attention}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<2x8x13x64xf32>, tensor<2x8x13x32xf32>
  return
}

// -----

func.func @attention_grad_heads_not_multiple(%q: tensor<2x8x13x64xf32>, %k: tensor<2x3x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query [2, 8, 13, 64] and key [2, 3, 13, 64] do not match as in rtx.attention}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<2x8x13x64xf32>, tensor<2x3x13x64xf32>
  return
}

// -----

func.func @attention_grad_zero_kv_heads(%q: tensor<2x8x13x64xf32>, %k: tensor<2x0x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op query [2, 8, 13, 64] and key [2, 0, 13, 64] do not match as in rtx.attention}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<2x8x13x64xf32>, tensor<2x0x13x64xf32>
  return
}

// -----

func.func @attention_grad_causal_lengths(%q: tensor<2x8x5x64xf32>, %k: tensor<2x2x13x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op causal attention needs equal query and key sequence lengths, got 5 and 13}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q causal : tensor<2x8x5x64xf32>, tensor<2x2x13x64xf32>
  return
}

// -----

func.func @attention_grad_element_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xbf16>) {
  // expected-error @+1 {{'rtx.attention_grad' op query element type 'f32' differs from key element type 'bf16'}}
  %0:3 = rtx.attention_grad %q, %k, %k, %q : tensor<2x8x13x64xf32>, tensor<2x8x13x64xbf16>
  return
}

// -----

func.func @attention_grad_value_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x7x64xf32>) {
  // expected-error @+1 {{'rtx.attention_grad' op failed to verify that all of {key, key_grad, value, value_grad} have same type}}
  %0:3 = "rtx.attention_grad"(%q, %k, %v, %q) : (tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x7x64xf32>, tensor<2x8x13x64xf32>) -> (tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x7x64xf32>)
  return
}

// -----

func.func @attention_grad_result_grad_type(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %do: tensor<2x8x13x64xbf16>) {
  // expected-error @+1 {{'rtx.attention_grad' op failed to verify that all of {query, query_grad, result_grad} have same type}}
  %0:3 = "rtx.attention_grad"(%q, %k, %k, %do) : (tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xbf16>) -> (tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.embedding_grad
//===----------------------------------------------------------------------===//

func.func @embedding_grad_table_rank(%ids: tensor<8x13xi32>, %dy: tensor<8x13x16xf32>) -> tensor<65x16x1xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op table gradient must be [vocab, dim], got [65, 16, 1]}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x16xf32> -> tensor<65x16x1xf32>
  return %0 : tensor<65x16x1xf32>
}

// -----

func.func @embedding_grad_result_grad_shape(%ids: tensor<8x13xi32>, %dy: tensor<8x13x7xf32>) -> tensor<65x16xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op result gradient shape [8, 13, 7] must be ids shape + [dim] = [8, 13, 16]}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x7xf32> -> tensor<65x16xf32>
  return %0 : tensor<65x16xf32>
}

// -----

func.func @embedding_grad_ids_shape(%ids: tensor<13x8xi32>, %dy: tensor<8x13x16xf32>) -> tensor<65x16xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op result gradient shape [8, 13, 16] must be ids shape + [dim] = [13, 8, 16]}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<13x8xi32>, tensor<8x13x16xf32> -> tensor<65x16xf32>
  return %0 : tensor<65x16xf32>
}

// -----

func.func @embedding_grad_element_type(%ids: tensor<8x13xi32>, %dy: tensor<8x13x16xbf16>) -> tensor<65x16xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op result gradient element type 'bf16' differs from table gradient element type 'f32'}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x16xbf16> -> tensor<65x16xf32>
  return %0 : tensor<65x16xf32>
}

// -----

func.func @embedding_grad_float_ids(%ids: tensor<8x13xf32>, %dy: tensor<8x13x16xf32>) -> tensor<65x16xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op operand #0 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8x13xf32>'}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xf32>, tensor<8x13x16xf32> -> tensor<65x16xf32>
  return %0 : tensor<65x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.cross_entropy_grad
//===----------------------------------------------------------------------===//

func.func @cross_entropy_grad_labels_shape(%l: tensor<8x13x65xf32>, %y: tensor<8x65xi32>, %d: tensor<f32>) -> tensor<8x13x65xf32> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op labels shape [8, 65] must equal the logits' leading shape}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<8x13x65xf32>, tensor<8x65xi32>, tensor<f32>
  return %0 : tensor<8x13x65xf32>
}

// -----

func.func @cross_entropy_grad_labels_rank(%l: tensor<13x65xf32>, %y: tensor<13x65xi32>, %d: tensor<f32>) -> tensor<13x65xf32> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op labels shape [13, 65] must equal the logits' leading shape}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<13x65xf32>, tensor<13x65xi32>, tensor<f32>
  return %0 : tensor<13x65xf32>
}

// -----

// Regression test (fixed): scalar logits are rejected, but with the labels message ("labels
// shape [] must equal the logits' leading shape") instead of rtx.cross_entropy's
// "logits must have rank at least 1". Only the rejection is checked.
func.func @cross_entropy_grad_scalar_logits(%l: tensor<f32>, %y: tensor<i32>, %d: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<f32>, tensor<i32>, tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_non_scalar_loss_grad(%l: tensor<13x65xf32>, %y: tensor<13xi32>, %d: tensor<1xf32>) -> tensor<13x65xf32> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<13x65xf32>, tensor<13xi32>, tensor<1xf32>
  return %0 : tensor<13x65xf32>
}

// -----

func.func @cross_entropy_grad_bf16_loss_grad(%l: tensor<13x65xbf16>, %y: tensor<13xi32>, %d: tensor<bf16>) -> tensor<13x65xbf16> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float or 64-bit float values, but got 'tensor<bf16>'}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<13x65xbf16>, tensor<13xi32>, tensor<bf16>
  return %0 : tensor<13x65xbf16>
}

// -----

func.func @cross_entropy_grad_result_type(%l: tensor<13x65xf32>, %y: tensor<13xi32>, %d: tensor<f32>) -> tensor<13x65xbf16> {
  // expected-error @+1 {{'rtx.cross_entropy_grad' op failed to verify that all of {logits, logits_grad} have same type}}
  %0 = "rtx.cross_entropy_grad"(%l, %y, %d) : (tensor<13x65xf32>, tensor<13xi32>, tensor<f32>) -> tensor<13x65xbf16>
  return %0 : tensor<13x65xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.pad
//===----------------------------------------------------------------------===//

func.func @pad_low_entries(%x: tensor<4x5xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'rtx.pad' op low and high need one entry per dimension (2)}}
  %0 = rtx.pad %x low [2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @pad_high_entries(%x: tensor<4x5xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'rtx.pad' op low and high need one entry per dimension (2)}}
  %0 = rtx.pad %x low [0, 2] high [0, 3, 0] : tensor<4x5xf32> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @pad_negative_low(%x: tensor<4x5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rtx.pad' op padding of dimension 1 must be non-negative}}
  %0 = rtx.pad %x low [0, -2] high [0, 0] : tensor<4x5xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_negative_high(%x: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rtx.pad' op padding of dimension 0 must be non-negative}}
  %0 = rtx.pad %x low [0, 0] high [-1, 0] : tensor<4x5xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @pad_element_type(%x: tensor<4x5xf32>) -> tensor<4x10xbf16> {
  // expected-error @+1 {{'rtx.pad' op input element type 'f32' differs from result element type 'bf16'}}
  %0 = rtx.pad %x low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xbf16>
  return %0 : tensor<4x10xbf16>
}

// -----

func.func @pad_result_shape(%x: tensor<4x5xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{'rtx.pad' op result shape [4, 9] does not match the expected shape [4, 10]}}
  %0 = rtx.pad %x low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @pad_result_rank(%x: tensor<4x5xf32>) -> tensor<20xf32> {
  // expected-error @+1 {{'rtx.pad' op result shape [20] does not match the expected shape [4, 5]}}
  %0 = rtx.pad %x low [0, 0] high [0, 0] : tensor<4x5xf32> -> tensor<20xf32>
  return %0 : tensor<20xf32>
}

// -----

//===----------------------------------------------------------------------===//
// rtx.adamw_update
//===----------------------------------------------------------------------===//

func.func @adamw_update_shapes(%p: tensor<65x13xf32>, %g: tensor<13x65xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op parameter and gradient shapes differ}}
  %0:3 = rtx.adamw_update %p, %g, %g, %g, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<65x13xf32>, tensor<13x65xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_negative_warmup(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op warmup_steps must be >= 0, got -1}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps -1 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_decay_inside_warmup(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op decay_steps must be 0 (no decay) or greater than warmup_steps (10), got 10}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 10 decay_steps 10 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_min_lr_above_lr(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op min_lr must be in [0, lr] = [0, 1.000000e-03], got 2.000000e-03}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 decay_steps 10 min_lr 2.0e-03 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_negative_min_lr(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op min_lr must be in [0, lr] = [0, 1.000000e-03], got -1.000000e-04}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 decay_steps 10 min_lr -1.0e-04 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_min_lr_without_decay(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op min_lr 1.000000e-04 needs decay_steps (the step it is reached at)}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 0.0 warmup_steps 5 min_lr 1.0e-04 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_negative_lr(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op lr must be in [0.000000e+00, 1.000000e+09], got -1.000000e-03}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr -1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_nan_lr(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op lr must be in [0.000000e+00, 1.000000e+09], got nan}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 0x7FF8000000000000 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_beta1_one(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op beta1 must be in [0.000000e+00, 1.000000e+00], got 1.000000e+00}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(1.0, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_negative_beta2(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op beta2 must be in [0.000000e+00, 1.000000e+00], got -9.990000e-01}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, -9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_large_eps(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op eps must be in [0.000000e+00, 1.000000e+00], got 2.000000e+00}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 2.0 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_negative_weight_decay(%p: tensor<7xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op weight_decay must be in [0.000000e+00, 1.000000e+09], got -1.000000e-02}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay -1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_vector_step(%p: tensor<7xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'rtx.adamw_update' op operand #4 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<1xf32>
  return
}

// -----

func.func @adamw_update_f64_step(%p: tensor<7xf32>, %s: tensor<f64>) {
  // expected-error @+1 {{'rtx.adamw_update' op operand #4 must be 0D tensor of 32-bit float values, but got 'tensor<f64>'}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<7xf32>, tensor<7xf32>, tensor<f64>
  return
}

// -----

func.func @adamw_update_new_param_type(%p: tensor<7xf32>, %g: tensor<7xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op failed to verify that all of {param, new_param} have same type}}
  %0:3 = "rtx.adamw_update"(%p, %g, %g, %g, %s) <{beta1 = 9.0e-01 : f64, beta2 = 9.99e-01 : f64, eps = 1.0e-08 : f64, lr = 1.0e-03 : f64, weight_decay = 1.0e-02 : f64}> : (tensor<7xf32>, tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>, tensor<f32>) -> (tensor<7xbf16>, tensor<7xbf16>, tensor<7xbf16>)
  return
}

// -----

func.func @adamw_update_moment_type(%p: tensor<7xf32>, %g: tensor<7xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'rtx.adamw_update' op failed to verify that all of {grad, exp_avg, exp_avg_sq, new_exp_avg, new_exp_avg_sq} have same type}}
  %0:3 = "rtx.adamw_update"(%p, %g, %p, %p, %s) <{beta1 = 9.0e-01 : f64, beta2 = 9.99e-01 : f64, eps = 1.0e-08 : f64, lr = 1.0e-03 : f64, weight_decay = 1.0e-02 : f64}> : (tensor<7xf32>, tensor<7xbf16>, tensor<7xf32>, tensor<7xf32>, tensor<f32>) -> (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.sgd_update
//===----------------------------------------------------------------------===//

func.func @sgd_update_shapes(%p: tensor<65x13xf32>, %g: tensor<65x1xf32>) -> tensor<65x13xf32> {
  // expected-error @+1 {{'rtx.sgd_update' op parameter and gradient shapes differ}}
  %0 = rtx.sgd_update %p, %g lr 1.0e-01 weight_decay 0.0 : tensor<65x13xf32>, tensor<65x1xf32>
  return %0 : tensor<65x13xf32>
}

// -----

func.func @sgd_update_large_lr(%p: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.sgd_update' op lr must be in [0.000000e+00, 1.000000e+09], got 2.000000e+09}}
  %0 = rtx.sgd_update %p, %p lr 2.0e+09 weight_decay 0.0 : tensor<7xf32>, tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @sgd_update_inf_weight_decay(%p: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.sgd_update' op weight_decay must be in [0.000000e+00, 1.000000e+09], got INF}}
  %0 = rtx.sgd_update %p, %p lr 1.0e-01 weight_decay 0x7FF0000000000000 : tensor<7xf32>, tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @sgd_update_new_param_type(%p: tensor<7xf32>, %g: tensor<7xbf16>) -> tensor<7xbf16> {
  // expected-error @+1 {{'rtx.sgd_update' op failed to verify that all of {param, new_param} have same type}}
  %0 = "rtx.sgd_update"(%p, %g) <{lr = 1.0e-01 : f64, weight_decay = 0.0 : f64}> : (tensor<7xf32>, tensor<7xbf16>) -> tensor<7xbf16>
  return %0 : tensor<7xbf16>
}
