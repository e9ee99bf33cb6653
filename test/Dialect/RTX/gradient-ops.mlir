// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Backward-pass and optimizer ops: rtx.unary_grad, rtx.layernorm_grad,
// rtx.rmsnorm_grad, rtx.softmax_grad, rtx.rope_grad, rtx.attention_grad,
// rtx.embedding_grad, rtx.cross_entropy_grad, rtx.pad, rtx.adamw_update,
// rtx.sgd_update.

// CHECK-LABEL: func.func @unary_grad_every_fn
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>, %[[DY:[^:]*]]: tensor<7x13xf32>)
// CHECK: %[[EXP:.*]] = rtx.unary_grad exp %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad log %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad sqrt %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad rsqrt %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad tanh %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad sigmoid %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad relu %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad silu %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: rtx.unary_grad gelu %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: %[[GT:.*]] = rtx.unary_grad gelu_tanh %[[X]], %[[DY]] : tensor<7x13xf32>
// CHECK: return %[[EXP]], %[[GT]]
func.func @unary_grad_every_fn(%x: tensor<7x13xf32>, %dy: tensor<7x13xf32>) -> (tensor<7x13xf32>, tensor<7x13xf32>) {
  %0 = rtx.unary_grad exp %x, %dy : tensor<7x13xf32>
  %1 = rtx.unary_grad log %x, %dy : tensor<7x13xf32>
  %2 = rtx.unary_grad sqrt %x, %dy : tensor<7x13xf32>
  %3 = rtx.unary_grad rsqrt %x, %dy : tensor<7x13xf32>
  %4 = rtx.unary_grad tanh %x, %dy : tensor<7x13xf32>
  %5 = rtx.unary_grad sigmoid %x, %dy : tensor<7x13xf32>
  %6 = rtx.unary_grad relu %x, %dy : tensor<7x13xf32>
  %7 = rtx.unary_grad silu %x, %dy : tensor<7x13xf32>
  %8 = rtx.unary_grad gelu %x, %dy : tensor<7x13xf32>
  %9 = rtx.unary_grad gelu_tanh %x, %dy : tensor<7x13xf32>
  return %0, %9 : tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

// Scalar, rank 3 and zero-size operands of the other float types.
// CHECK-LABEL: func.func @unary_grad_other_types
// CHECK: rtx.unary_grad tanh %{{.*}}, %{{.*}} : tensor<bf16>
// CHECK: rtx.unary_grad silu %{{.*}}, %{{.*}} : tensor<2x1x5xf64>
// CHECK: rtx.unary_grad relu %{{.*}}, %{{.*}} : tensor<0x3xf16>
func.func @unary_grad_other_types(%s: tensor<bf16>, %x: tensor<2x1x5xf64>, %e: tensor<0x3xf16>) -> (tensor<bf16>, tensor<2x1x5xf64>, tensor<0x3xf16>) {
  %0 = rtx.unary_grad tanh %s, %s : tensor<bf16>
  %1 = rtx.unary_grad silu %x, %x : tensor<2x1x5xf64>
  %2 = rtx.unary_grad relu %e, %e : tensor<0x3xf16>
  return %0, %1, %2 : tensor<bf16>, tensor<2x1x5xf64>, tensor<0x3xf16>
}

// -----

// CHECK-LABEL: func.func @layernorm_grad
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x7x65xf32>, %[[G:[^:]*]]: tensor<65xf32>, %[[DY:[^:]*]]: tensor<2x7x65xf32>)
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = rtx.layernorm_grad %[[X]], %[[G]], %[[DY]] eps 1.000000e-05 : tensor<2x7x65xf32>, tensor<65xf32>
// CHECK: return %[[DX]], %[[DG]], %[[DB]]
func.func @layernorm_grad(%x: tensor<2x7x65xf32>, %g: tensor<65xf32>, %dy: tensor<2x7x65xf32>) -> (tensor<2x7x65xf32>, tensor<65xf32>, tensor<65xf32>) {
  %dx, %dg, %db = rtx.layernorm_grad %x, %g, %dy eps 1.0e-05 : tensor<2x7x65xf32>, tensor<65xf32>
  return %dx, %dg, %db : tensor<2x7x65xf32>, tensor<65xf32>, tensor<65xf32>
}

// -----

// Rank 1 input and a zero epsilon are both allowed.
// CHECK-LABEL: func.func @layernorm_grad_vector_zero_eps
// CHECK: rtx.layernorm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 0.000000e+00 : tensor<13xbf16>, tensor<13xbf16>
func.func @layernorm_grad_vector_zero_eps(%x: tensor<13xbf16>, %g: tensor<13xbf16>) -> (tensor<13xbf16>, tensor<13xbf16>, tensor<13xbf16>) {
  %dx, %dg, %db = rtx.layernorm_grad %x, %g, %x eps 0.0 : tensor<13xbf16>, tensor<13xbf16>
  return %dx, %dg, %db : tensor<13xbf16>, tensor<13xbf16>, tensor<13xbf16>
}

// -----

// CHECK-LABEL: func.func @rmsnorm_grad
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x13x64xf32>, %[[G:[^:]*]]: tensor<64xf32>, %[[DY:[^:]*]]: tensor<2x13x64xf32>)
// 1e-6 is not exact in binary: it prints with all its digits.
// CHECK: %[[DX:.*]], %[[DG:.*]] = rtx.rmsnorm_grad %[[X]], %[[G]], %[[DY]] eps 9.9999999999999995E-7 : tensor<2x13x64xf32>, tensor<64xf32>
// CHECK: return %[[DX]], %[[DG]]
func.func @rmsnorm_grad(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>, %dy: tensor<2x13x64xf32>) -> (tensor<2x13x64xf32>, tensor<64xf32>) {
  %dx, %dg = rtx.rmsnorm_grad %x, %g, %dy eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf32>
  return %dx, %dg : tensor<2x13x64xf32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @rmsnorm_grad_vector_f64
// CHECK: rtx.rmsnorm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 5.000000e-01 : tensor<65xf64>, tensor<65xf64>
func.func @rmsnorm_grad_vector_f64(%x: tensor<65xf64>, %g: tensor<65xf64>) -> (tensor<65xf64>, tensor<65xf64>) {
  %dx, %dg = rtx.rmsnorm_grad %x, %g, %x eps 0.5 : tensor<65xf64>, tensor<65xf64>
  return %dx, %dg : tensor<65xf64>, tensor<65xf64>
}

// -----

// CHECK-LABEL: func.func @softmax_grad_dims
// CHECK-SAME: (%[[Y:[^:]*]]: tensor<2x12x13x13xf32>, %[[DY:[^:]*]]: tensor<2x12x13x13xf32>)
// CHECK: %[[A:.*]] = rtx.softmax_grad %[[Y]], %[[DY]] dim 3 : tensor<2x12x13x13xf32>
// CHECK: %[[B:.*]] = rtx.softmax_grad %[[Y]], %[[A]] dim 0 : tensor<2x12x13x13xf32>
// CHECK: return %[[B]]
func.func @softmax_grad_dims(%y: tensor<2x12x13x13xf32>, %dy: tensor<2x12x13x13xf32>) -> tensor<2x12x13x13xf32> {
  %0 = rtx.softmax_grad %y, %dy dim 3 : tensor<2x12x13x13xf32>
  %1 = rtx.softmax_grad %y, %0 dim 0 : tensor<2x12x13x13xf32>
  return %1 : tensor<2x12x13x13xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_grad_vector_f16
// CHECK: rtx.softmax_grad %{{.*}}, %{{.*}} dim 0 : tensor<65xf16>
func.func @softmax_grad_vector_f16(%y: tensor<65xf16>, %dy: tensor<65xf16>) -> tensor<65xf16> {
  %0 = rtx.softmax_grad %y, %dy dim 0 : tensor<65xf16>
  return %0 : tensor<65xf16>
}

// -----

// CHECK-LABEL: func.func @rope_grad_default_offset
// CHECK-SAME: (%[[DY:[^:]*]]: tensor<2x8x13x64xf32>)
// CHECK: %[[DX:.*]] = rtx.rope_grad %[[DY]] theta 1.000000e+04 : tensor<2x8x13x64xf32>
// CHECK: return %[[DX]]
func.func @rope_grad_default_offset(%dy: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  %0 = rtx.rope_grad %dy theta 1.0e+04 : tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

// The offset is printed in the attribute dictionary, and only when it is not
// the default 0.
// CHECK-LABEL: func.func @rope_grad_offset
// CHECK: rtx.rope_grad %{{.*}} theta 5.000000e+05 {offset = 7 : i64} : tensor<1x4x13x2xbf16>
// CHECK: rtx.rope_grad %{{.*}} theta 5.000000e+05 : tensor<1x4x13x2xbf16>
func.func @rope_grad_offset(%dy: tensor<1x4x13x2xbf16>) -> (tensor<1x4x13x2xbf16>, tensor<1x4x13x2xbf16>) {
  %0 = rtx.rope_grad %dy theta 5.0e+05 {offset = 7 : i64} : tensor<1x4x13x2xbf16>
  %1 = rtx.rope_grad %dy theta 5.0e+05 {offset = 0 : i64} : tensor<1x4x13x2xbf16>
  return %0, %1 : tensor<1x4x13x2xbf16>, tensor<1x4x13x2xbf16>
}

// -----

// Grouped key/value heads (Hq = 8, Hkv = 2), causal, default scale.
// CHECK-LABEL: func.func @attention_grad_grouped_causal
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x16x64xf32>, %[[K:[^:]*]]: tensor<2x2x16x64xf32>, %[[V:[^:]*]]: tensor<2x2x16x64xf32>, %[[DO:[^:]*]]: tensor<2x8x16x64xf32>)
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = rtx.attention_grad %[[Q]], %[[K]], %[[V]], %[[DO]] causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_grad_grouped_causal(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>, %do: tensor<2x8x16x64xf32>) -> (tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>) {
  %dq, %dk, %dv = rtx.attention_grad %q, %k, %v, %do causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>
  return %dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
}

// -----

// Multi-query (Hkv = 1), different query and key lengths, not causal.
// CHECK-LABEL: func.func @attention_grad_multi_query_cross
// CHECK: rtx.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x7x5x16xbf16>, tensor<3x1x13x16xbf16>
func.func @attention_grad_multi_query_cross(%q: tensor<3x7x5x16xbf16>, %k: tensor<3x1x13x16xbf16>, %v: tensor<3x1x13x16xbf16>, %do: tensor<3x7x5x16xbf16>) -> tensor<3x1x13x16xbf16> {
  %dq, %dk, %dv = rtx.attention_grad %q, %k, %v, %do : tensor<3x7x5x16xbf16>, tensor<3x1x13x16xbf16>
  return %dv : tensor<3x1x13x16xbf16>
}

// -----

// CHECK-LABEL: func.func @attention_grad_scale
// CHECK: rtx.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale 1.250000e-01 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>
// CHECK: rtx.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>
func.func @attention_grad_scale(%q: tensor<1x4x13x64xf32>, %k: tensor<1x4x13x64xf32>, %v: tensor<1x4x13x64xf32>, %do: tensor<1x4x13x64xf32>) -> (tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>) {
  %a:3 = rtx.attention_grad %q, %k, %v, %do scale 1.250000e-01 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>
  %b:3 = rtx.attention_grad %q, %k, %v, %do causal scale 0.5 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>
  return %a#0, %b#2 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>
}

// -----

// CHECK-LABEL: func.func @embedding_grad_tokens
// CHECK-SAME: (%[[I:[^:]*]]: tensor<8x13xi32>, %[[DY:[^:]*]]: tensor<8x13x768xf32>)
// CHECK: %[[DT:.*]] = rtx.embedding_grad %[[I]], %[[DY]] : tensor<8x13xi32>, tensor<8x13x768xf32> -> tensor<50257x768xf32>
// CHECK: return %[[DT]]
func.func @embedding_grad_tokens(%ids: tensor<8x13xi32>, %dy: tensor<8x13x768xf32>) -> tensor<50257x768xf32> {
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x768xf32> -> tensor<50257x768xf32>
  return %0 : tensor<50257x768xf32>
}

// -----

// Rank 1 and scalar ids, i64 ids, bf16 gradients.
// CHECK-LABEL: func.func @embedding_grad_id_shapes
// CHECK: rtx.embedding_grad %{{.*}}, %{{.*}} : tensor<13xi64>, tensor<13x7xbf16> -> tensor<65x7xbf16>
// CHECK: rtx.embedding_grad %{{.*}}, %{{.*}} : tensor<i32>, tensor<7xbf16> -> tensor<65x7xbf16>
func.func @embedding_grad_id_shapes(%ids: tensor<13xi64>, %dy: tensor<13x7xbf16>, %id: tensor<i32>, %dy1: tensor<7xbf16>) -> (tensor<65x7xbf16>, tensor<65x7xbf16>) {
  %0 = rtx.embedding_grad %ids, %dy : tensor<13xi64>, tensor<13x7xbf16> -> tensor<65x7xbf16>
  %1 = rtx.embedding_grad %id, %dy1 : tensor<i32>, tensor<7xbf16> -> tensor<65x7xbf16>
  return %0, %1 : tensor<65x7xbf16>, tensor<65x7xbf16>
}

// -----

// CHECK-LABEL: func.func @cross_entropy_grad_ignore_index
// CHECK-SAME: (%[[L:[^:]*]]: tensor<8x13x65xf32>, %[[Y:[^:]*]]: tensor<8x13xi32>, %[[D:[^:]*]]: tensor<f32>)
// CHECK: %[[DL:.*]] = rtx.cross_entropy_grad %[[L]], %[[Y]], %[[D]] ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32>, tensor<f32>
// CHECK: return %[[DL]]
func.func @cross_entropy_grad_ignore_index(%l: tensor<8x13x65xf32>, %y: tensor<8x13xi32>, %d: tensor<f32>) -> tensor<8x13x65xf32> {
  %0 = rtx.cross_entropy_grad %l, %y, %d ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32>, tensor<f32>
  return %0 : tensor<8x13x65xf32>
}

// -----

// bf16 logits with an f32 loss gradient; no ignore_index.
// CHECK-LABEL: func.func @cross_entropy_grad_no_ignore_index
// CHECK: rtx.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<7x65xbf16>, tensor<7xi64>, tensor<f32>
func.func @cross_entropy_grad_no_ignore_index(%l: tensor<7x65xbf16>, %y: tensor<7xi64>, %d: tensor<f32>) -> tensor<7x65xbf16> {
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<7x65xbf16>, tensor<7xi64>, tensor<f32>
  return %0 : tensor<7x65xbf16>
}

// -----

// CHECK-LABEL: func.func @cross_entropy_grad_single_token_f64
// CHECK: rtx.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index 0 : tensor<13xf64>, tensor<i32>, tensor<f64>
func.func @cross_entropy_grad_single_token_f64(%l: tensor<13xf64>, %y: tensor<i32>, %d: tensor<f64>) -> tensor<13xf64> {
  %0 = rtx.cross_entropy_grad %l, %y, %d ignore_index 0 : tensor<13xf64>, tensor<i32>, tensor<f64>
  return %0 : tensor<13xf64>
}

// -----

// CHECK-LABEL: func.func @pad_slice_gradient
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x5xf32>)
// CHECK: %[[P:.*]] = rtx.pad %[[X]] low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xf32>
// CHECK: return %[[P]]
func.func @pad_slice_gradient(%x: tensor<4x5xf32>) -> tensor<4x10xf32> {
  %0 = rtx.pad %x low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

// Integer and mask tensors, no padding at all, a zero-size input and a scalar.
// CHECK-LABEL: func.func @pad_other
// CHECK: rtx.pad %{{.*}} low [1, 0, 2] high [0, 0, 7] : tensor<2x1x3xi64> -> tensor<3x1x12xi64>
// CHECK: rtx.pad %{{.*}} low [0] high [0] : tensor<13xi1> -> tensor<13xi1>
// CHECK: rtx.pad %{{.*}} low [3, 0] high [4, 1] : tensor<0x7xbf16> -> tensor<7x8xbf16>
// CHECK: rtx.pad %{{.*}} low [] high [] : tensor<i32> -> tensor<i32>
func.func @pad_other(%a: tensor<2x1x3xi64>, %m: tensor<13xi1>, %e: tensor<0x7xbf16>, %s: tensor<i32>) -> (tensor<3x1x12xi64>, tensor<13xi1>, tensor<7x8xbf16>, tensor<i32>) {
  %0 = rtx.pad %a low [1, 0, 2] high [0, 0, 7] : tensor<2x1x3xi64> -> tensor<3x1x12xi64>
  %1 = rtx.pad %m low [0] high [0] : tensor<13xi1> -> tensor<13xi1>
  %2 = rtx.pad %e low [3, 0] high [4, 1] : tensor<0x7xbf16> -> tensor<7x8xbf16>
  %3 = rtx.pad %s low [] high [] : tensor<i32> -> tensor<i32>
  return %0, %1, %2, %3 : tensor<3x1x12xi64>, tensor<13xi1>, tensor<7x8xbf16>, tensor<i32>
}

// -----

// CHECK-LABEL: func.func @adamw_update
// CHECK-SAME: (%[[P:[^:]*]]: tensor<65x13xf32>, %[[G:[^:]*]]: tensor<65x13xf32>, %[[M:[^:]*]]: tensor<65x13xf32>, %[[V:[^:]*]]: tensor<65x13xf32>, %[[S:[^:]*]]: tensor<f32>)
// 0.999 is not exact in binary: it prints with all its digits.
// CHECK: %[[P2:.*]], %[[M2:.*]], %[[V2:.*]] = rtx.adamw_update %[[P]], %[[G]], %[[M]], %[[V]], %[[S]] lr 1.000000e-03 betas(9.000000e-01, 0.99899999999999999) eps 1.000000e-08 weight_decay 1.000000e-02 : tensor<65x13xf32>, tensor<65x13xf32>, tensor<f32>
// CHECK: return %[[P2]], %[[M2]], %[[V2]]
func.func @adamw_update(%p: tensor<65x13xf32>, %g: tensor<65x13xf32>, %m: tensor<65x13xf32>, %v: tensor<65x13xf32>, %step: tensor<f32>) -> (tensor<65x13xf32>, tensor<65x13xf32>, tensor<65x13xf32>) {
  %p2, %m2, %v2 = rtx.adamw_update %p, %g, %m, %v, %step lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<65x13xf32>, tensor<65x13xf32>, tensor<f32>
  return %p2, %m2, %v2 : tensor<65x13xf32>, tensor<65x13xf32>, tensor<65x13xf32>
}

// -----

// A learning-rate schedule: printed after the hyper-parameters, each of its
// attributes only when set (a warm-up alone is constant after it).
// CHECK-LABEL: func.func @adamw_update_schedule
// CHECK: rtx.adamw_update {{.*}} weight_decay 1.000000e-01 warmup_steps 10 decay_steps 100 min_lr 6.000000e-05 : tensor<7xf32>
// CHECK: rtx.adamw_update {{.*}} weight_decay 1.000000e-01 warmup_steps 10 : tensor<7xf32>
// CHECK: rtx.adamw_update {{.*}} weight_decay 1.000000e-01 decay_steps 5 : tensor<7xf32>
func.func @adamw_update_schedule(%p: tensor<7xf32>, %step: tensor<f32>) -> (tensor<7xf32>, tensor<7xf32>, tensor<7xf32>) {
  %a:3 = rtx.adamw_update %p, %p, %p, %p, %step lr 6.0e-04 betas(9.0e-01, 9.5e-01) eps 1.0e-08 weight_decay 1.0e-01 warmup_steps 10 decay_steps 100 min_lr 6.0e-05 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  %b:3 = rtx.adamw_update %p, %p, %p, %p, %step lr 6.0e-04 betas(9.0e-01, 9.5e-01) eps 1.0e-08 weight_decay 1.0e-01 warmup_steps 10 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  %c:3 = rtx.adamw_update %p, %p, %p, %p, %step lr 6.0e-04 betas(9.0e-01, 9.5e-01) eps 1.0e-08 weight_decay 1.0e-01 decay_steps 5 : tensor<7xf32>, tensor<7xf32>, tensor<f32>
  return %a#0, %b#0, %c#0 : tensor<7xf32>, tensor<7xf32>, tensor<7xf32>
}

// -----

// Mixed precision: an f32 master weight with bf16 gradient and moments. The
// hyper-parameters at the ends of their ranges: all zero, and the largest lr,
// eps and weight decay.
// CHECK-LABEL: func.func @adamw_update_mixed_precision_bounds
// CHECK: rtx.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr 0.000000e+00 betas(0.000000e+00, 0.000000e+00) eps 0.000000e+00 weight_decay 0.000000e+00 : tensor<7xf32>, tensor<7xbf16>, tensor<f32>
// CHECK: rtx.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr 1.000000e+09 betas(5.000000e-01, 2.500000e-01) eps 1.000000e+00 weight_decay 1.000000e+09 : tensor<f64>, tensor<f16>, tensor<f32>
func.func @adamw_update_mixed_precision_bounds(%p: tensor<7xf32>, %g: tensor<7xbf16>, %step: tensor<f32>, %ps: tensor<f64>, %gs: tensor<f16>) -> (tensor<7xf32>, tensor<7xbf16>, tensor<f64>, tensor<f16>) {
  %p2, %m2, %v2 = rtx.adamw_update %p, %g, %g, %g, %step lr 0.0 betas(0.0, 0.0) eps 0.0 weight_decay 0.0 : tensor<7xf32>, tensor<7xbf16>, tensor<f32>
  %q2, %n2, %w2 = rtx.adamw_update %ps, %gs, %gs, %gs, %step lr 1.0e+09 betas(0.5, 0.25) eps 1.0 weight_decay 1.0e+09 : tensor<f64>, tensor<f16>, tensor<f32>
  return %p2, %v2, %q2, %w2 : tensor<7xf32>, tensor<7xbf16>, tensor<f64>, tensor<f16>
}

// -----

// CHECK-LABEL: func.func @sgd_update
// CHECK-SAME: (%[[P:[^:]*]]: tensor<65x13xf32>, %[[G:[^:]*]]: tensor<65x13xf32>)
// CHECK: %[[P2:.*]] = rtx.sgd_update %[[P]], %[[G]] lr 1.000000e-01 weight_decay 0.000000e+00 : tensor<65x13xf32>, tensor<65x13xf32>
// CHECK: return %[[P2]]
func.func @sgd_update(%p: tensor<65x13xf32>, %g: tensor<65x13xf32>) -> tensor<65x13xf32> {
  %0 = rtx.sgd_update %p, %g lr 1.0e-01 weight_decay 0.0 : tensor<65x13xf32>, tensor<65x13xf32>
  return %0 : tensor<65x13xf32>
}

// -----

// The gradient may have another element type than the parameter.
// CHECK-LABEL: func.func @sgd_update_mixed_precision
// CHECK: rtx.sgd_update %{{.*}}, %{{.*}} lr 2.500000e-01 weight_decay 5.000000e-01 : tensor<7x1xf32>, tensor<7x1xbf16>
// CHECK: rtx.sgd_update %{{.*}}, %{{.*}} lr 0.000000e+00 weight_decay 1.000000e+09 : tensor<f16>, tensor<f64>
func.func @sgd_update_mixed_precision(%p: tensor<7x1xf32>, %g: tensor<7x1xbf16>, %ps: tensor<f16>, %gs: tensor<f64>) -> (tensor<7x1xf32>, tensor<f16>) {
  %0 = rtx.sgd_update %p, %g lr 0.25 weight_decay 0.5 : tensor<7x1xf32>, tensor<7x1xbf16>
  %1 = rtx.sgd_update %ps, %gs lr 0.0 weight_decay 1.0e+09 : tensor<f16>, tensor<f64>
  return %0, %1 : tensor<7x1xf32>, tensor<f16>
}
