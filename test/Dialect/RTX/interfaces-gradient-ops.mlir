// RUN: rtx-opt %s -split-input-file -rtx-test-op-interfaces -verify-diagnostics

// Sharding rules (ShardingRuleOpInterface) and costs (CostOpInterface) of the
// backward-pass and optimizer ops, as printed by -rtx-test-op-interfaces (the
// format is described in interfaces.mlir). FLOPs are computed by hand from the
// formulas in RTXGradientOps.td (and RTXCost.cpp where the op description
// gives none); bytes are the sizes of all operands and results (f64: 8 bytes,
// f32: 4, bf16/f16: 2, i32: 4, i64: 8, i1: 1).

//===----------------------------------------------------------------------===//
// rtx.unary_grad: elementwise, 6 FLOPs per element whatever the function.
//===----------------------------------------------------------------------===//

// 6*91 = 546 FLOPs; 3*91*4 = 1092 bytes.
func.func @unary_grad_rules(%x: tensor<7x13xf32>, %dy: tensor<7x13xf32>) {
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 546; bytes: 1092}}
  %0 = rtx.unary_grad gelu_tanh %x, %dy : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 546; bytes: 1092}}
  %1 = rtx.unary_grad relu %x, %dy : tensor<7x13xf32>
  return
}

// -----

func.func @unary_grad_scalar_rule(%x: tensor<bf16>) {
  // A scalar has no factor. 6 FLOPs; 3*2 = 6 bytes.
  // expected-remark @+1 {{rule: ([], []) -> ([]) {}; flops: 6; bytes: 6}}
  %0 = rtx.unary_grad exp %x, %x : tensor<bf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalisation gradients: the feature dimension stays whole; dscale and dbias
// lack the leading factors (split ones leave partial sums there).
//===----------------------------------------------------------------------===//

func.func @layernorm_grad_rule(%x: tensor<2x7x65xf32>, %g: tensor<65xf32>, %dy: tensor<2x7x65xf32>) {
  // 14*910 = 12740 FLOPs; (910 + 65 + 910 + 910 + 65 + 65)*4 = 11700 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [k], [i, j, k]) -> ([i, j, k], [k], [k]) {i=2, j=7, k=65} need_replication={k}; flops: 12740; bytes: 11700}}
  %0:3 = rtx.layernorm_grad %x, %g, %dy eps 1.0e-05 : tensor<2x7x65xf32>, tensor<65xf32>
  return
}

// -----

func.func @layernorm_grad_vector_rule(%x: tensor<13xbf16>, %g: tensor<13xbf16>) {
  // Rank 1: only the feature factor. 14*13 = 182 FLOPs; 6*13*2 = 156 bytes.
  // expected-remark @+1 {{rule: ([i], [i], [i]) -> ([i], [i], [i]) {i=13} need_replication={i}; flops: 182; bytes: 156}}
  %0:3 = rtx.layernorm_grad %x, %g, %x eps 1.0e-05 : tensor<13xbf16>, tensor<13xbf16>
  return
}

// -----

func.func @rmsnorm_grad_rule(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>, %dy: tensor<2x13x64xf32>) {
  // 10*1664 = 16640 FLOPs; (1664 + 64 + 1664 + 1664 + 64)*4 = 20480 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [k], [i, j, k]) -> ([i, j, k], [k]) {i=2, j=13, k=64} need_replication={k}; flops: 16640; bytes: 20480}}
  %0:2 = rtx.rmsnorm_grad %x, %g, %dy eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Softmax and rope gradients
//===----------------------------------------------------------------------===//

func.func @softmax_grad_rule(%y: tensor<2x12x13x13xf32>, %dy: tensor<2x12x13x13xf32>) {
  // Only the softmax dimension must stay whole. 4*4056 = 16224 FLOPs;
  // 3*4056*4 = 48672 bytes.
  // expected-remark @+1 {{rule: ([i, j, k, l], [i, j, k, l]) -> ([i, j, k, l]) {i=2, j=12, k=13, l=13} need_replication={l}; flops: 16224; bytes: 48672}}
  %0 = rtx.softmax_grad %y, %dy dim 3 : tensor<2x12x13x13xf32>
  // expected-remark @+1 {{rule: ([i, j, k, l], [i, j, k, l]) -> ([i, j, k, l]) {i=2, j=12, k=13, l=13} need_replication={j}; flops: 16224; bytes: 48672}}
  %1 = rtx.softmax_grad %y, %dy dim 1 : tensor<2x12x13x13xf32>
  return
}

// -----

func.func @rope_grad_rule(%dy: tensor<2x8x13x64xf32>) {
  // As rtx.rope: sequence and head_dim stay whole. 3*13312 = 39936 FLOPs;
  // 2*13312*4 = 106496 bytes.
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=8, k=13, l=64} need_replication={k, l}; flops: 39936; bytes: 106496}}
  %0 = rtx.rope_grad %dy theta 1.0e+04 : tensor<2x8x13x64xf32>
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=8, k=13, l=64} need_replication={k, l}; flops: 39936; bytes: 106496}}
  %1 = rtx.rope_grad %dy theta 1.0e+04 {offset = 5 : i64} : tensor<2x8x13x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.attention_grad: twice the forward's FLOPs, 2*(4*B*Hq*P*D + 5*B*Hq*P).
// Operands q, k, v, dout; results dq, dk, dv. dk and dv lack the query-group
// and query-sequence factors: split ones leave partial sums there.
//===----------------------------------------------------------------------===//

// Hq = 8 over Hkv = 2: a query head dimension is (kv head j, head within the
// group k). Causal: P = 16*17/2 = 136, B*Hq*P = 2*8*136 = 2176:
// 2*(4*2176*64 + 5*2176) = 2*(557056 + 10880) = 1135872 FLOPs;
// q, dout and dq have 16384 elements, k, v, dk and dv 4096:
// (3*16384 + 4*4096)*4 = 262144 bytes.
func.func @attention_grad_grouped_causal_rule(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>, %do: tensor<2x8x16x64xf32>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n], [i, j*k, l, n]) -> ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) {i=2, j=2, k=4, l=16, m=16, n=64} need_replication={l, m, n}; flops: 1135872; bytes: 262144}}
  %0:3 = rtx.attention_grad %q, %k, %v, %do causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>
  return
}

// -----

// Not causal: the query sequence may be split. P = 16*16 = 256,
// B*Hq*P = 4096: 2*(4*4096*64 + 5*4096) = 2*(1048576 + 20480) = 2138112 FLOPs.
func.func @attention_grad_grouped_non_causal_rule(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>, %do: tensor<2x8x16x64xf32>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n], [i, j*k, l, n]) -> ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) {i=2, j=2, k=4, l=16, m=16, n=64} need_replication={m, n}; flops: 2138112; bytes: 262144}}
  %0:3 = rtx.attention_grad %q, %k, %v, %do : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>
  return
}

// -----

// Hq = Hkv: no group factor. P = 13*13 = 169, B*Hq*P = 676:
// 2*(4*676*8 + 5*676) = 2*(21632 + 3380) = 50024 FLOPs; 7*416*4 = 11648 bytes.
func.func @attention_grad_multi_head_rule(%q: tensor<1x4x13x8xf32>, %k: tensor<1x4x13x8xf32>, %v: tensor<1x4x13x8xf32>, %do: tensor<1x4x13x8xf32>) {
  // expected-remark @+1 {{rule: ([i, j, k, m], [i, j, l, m], [i, j, l, m], [i, j, k, m]) -> ([i, j, k, m], [i, j, l, m], [i, j, l, m]) {i=1, j=4, k=13, l=13, m=8} need_replication={l, m}; flops: 50024; bytes: 11648}}
  %0:3 = rtx.attention_grad %q, %k, %v, %do : tensor<1x4x13x8xf32>, tensor<1x4x13x8xf32>
  return
}

// -----

// Sq = 5, Skv = 13, bf16: P = 65, B*Hq*P = 2*8*65 = 1040:
// 2*(4*1040*16 + 5*1040) = 2*(66560 + 5200) = 143520 FLOPs;
// (3*1280 + 4*832)*2 = 14336 bytes.
func.func @attention_grad_cross_lengths_rule(%q: tensor<2x8x5x16xbf16>, %k: tensor<2x2x13x16xbf16>, %v: tensor<2x2x13x16xbf16>, %do: tensor<2x8x5x16xbf16>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n], [i, j*k, l, n]) -> ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) {i=2, j=2, k=4, l=5, m=13, n=16} need_replication={m, n}; flops: 143520; bytes: 14336}}
  %0:3 = rtx.attention_grad %q, %k, %v, %do : tensor<2x8x5x16xbf16>, tensor<2x2x13x16xbf16>
  return
}

// -----

// Multi-query (Hkv = 1), causal, with a scale (which does not change the
// cost), f16: P = 13*14/2 = 91, B*Hq*P = 6*91 = 546:
// 2*(4*546*4 + 5*546) = 2*(8736 + 2730) = 22932 FLOPs;
// (3*312 + 4*52)*2 = 2288 bytes.
func.func @attention_grad_multi_query_causal_scale_rule(%q: tensor<1x6x13x4xf16>, %k: tensor<1x1x13x4xf16>, %v: tensor<1x1x13x4xf16>, %do: tensor<1x6x13x4xf16>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n], [i, j*k, l, n]) -> ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) {i=1, j=1, k=6, l=13, m=13, n=4} need_replication={l, m, n}; flops: 22932; bytes: 2288}}
  %0:3 = rtx.attention_grad %q, %k, %v, %do causal scale 0.5 : tensor<1x6x13x4xf16>, tensor<1x1x13x4xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Embedding and loss gradients
//===----------------------------------------------------------------------===//

// The scatter-add sums dy over the token positions: the token factors appear
// in operands only, so they are reductions (FactorKind::Reduction, "the factor
// appears in operands only"). 1 FLOP (an add) per dy element (RTXCost.cpp):
// 1664; (104 + 1664 + 1040)*4 = 11232 bytes.

func.func @embedding_grad_rule(%ids: tensor<8x13xi32>, %dy: tensor<8x13x16xf32>) {
  // expected-remark @+1 {{rule: ([i, j], [i, j, k]) -> ([l, k]) {i=8, j=13, k=16, l=65} reduction={i, j}; flops: 1664; bytes: 11232}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x16xf32> -> tensor<65x16xf32>
  return
}

// -----

func.func @embedding_grad_scalar_id_rule(%id: tensor<i32>, %dy: tensor<7xbf16>) {
  // No token factor: dim i and vocab j. 7 FLOPs; 4 + 7*2 + 65*7*2 = 928 bytes.
  // expected-remark @+1 {{rule: ([], [i]) -> ([j, i]) {i=7, j=65}; flops: 7; bytes: 928}}
  %0 = rtx.embedding_grad %id, %dy : tensor<i32>, tensor<7xbf16> -> tensor<65x7xbf16>
  return
}

// -----

func.func @cross_entropy_grad_rule(%l: tensor<8x13x65xf32>, %y: tensor<8x13xi32>, %d: tensor<f32>) {
  // Tokens are independent rows (rtx-partition rescales a split by 1/k); the
  // softmax needs the whole vocabulary. 5 FLOPs per logit: 5*6760 = 33800;
  // 6760*4 + 104*4 + 4 + 6760*4 = 54500 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [i, j], []) -> ([i, j, k]) {i=8, j=13, k=65} need_replication={k}; flops: 33800; bytes: 54500}}
  %0 = rtx.cross_entropy_grad %l, %y, %d ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32>, tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_single_token_rule(%l: tensor<13xf64>, %y: tensor<i64>, %d: tensor<f64>) {
  // 5*13 = 65 FLOPs; 13*8 + 8 + 8 + 13*8 = 224 bytes.
  // expected-remark @+1 {{rule: ([i], [], []) -> ([i]) {i=13} need_replication={i}; flops: 65; bytes: 224}}
  %0 = rtx.cross_entropy_grad %l, %y, %d : tensor<13xf64>, tensor<i64>, tensor<f64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// rtx.pad: data movement, 0 FLOPs.
//===----------------------------------------------------------------------===//

func.func @pad_rule(%x: tensor<4x5xf32>) {
  // As rtx.slice: a padded dimension gets separate need-replication factors on
  // each side; an unpadded one is shared. (20 + 40)*4 = 240 bytes.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, k]) {i=4, j=5, k=10} need_replication={j, k}; flops: 0; bytes: 240}}
  %0 = rtx.pad %x low [0, 2] high [0, 3] : tensor<4x5xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @pad_nothing_rule(%m: tensor<7x13xi1>) {
  // No padding: one shared factor per dimension. 2*91*1 = 182 bytes.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 0; bytes: 182}}
  %0 = rtx.pad %m low [0, 0] high [0, 0] : tensor<7x13xi1> -> tensor<7x13xi1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Optimizer updates: elementwise; the scalar step takes no factor.
//===----------------------------------------------------------------------===//

func.func @adamw_update_rule(%p: tensor<65x13xf32>, %s: tensor<f32>) {
  // 12 FLOPs per element: 12*845 = 10140; 7*845*4 + 4 = 23664 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j], [i, j], [i, j], []) -> ([i, j], [i, j], [i, j]) {i=65, j=13}; flops: 10140; bytes: 23664}}
  %0:3 = rtx.adamw_update %p, %p, %p, %p, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<65x13xf32>, tensor<65x13xf32>, tensor<f32>
  return
}

// -----

func.func @adamw_update_mixed_precision_rule(%p: tensor<65x13xf32>, %g: tensor<65x13xbf16>, %s: tensor<f32>) {
  // f32 parameter, bf16 gradient and moments: 2*845*4 (p, p') +
  // 5*845*2 (g, m, v, m', v') + 4 = 6760 + 8450 + 4 = 15214 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j], [i, j], [i, j], []) -> ([i, j], [i, j], [i, j]) {i=65, j=13}; flops: 10140; bytes: 15214}}
  %0:3 = rtx.adamw_update %p, %g, %g, %g, %s lr 1.0e-03 betas(9.0e-01, 9.99e-01) eps 1.0e-08 weight_decay 1.0e-02 : tensor<65x13xf32>, tensor<65x13xbf16>, tensor<f32>
  return
}

// -----

func.func @sgd_update_rule(%p: tensor<65x13xf32>, %g: tensor<65x13xf32>, %gb: tensor<65x13xbf16>) {
  // 3 FLOPs per element: 3*845 = 2535; 3*845*4 = 10140 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=65, j=13}; flops: 2535; bytes: 10140}}
  %0 = rtx.sgd_update %p, %g lr 1.0e-01 weight_decay 0.0 : tensor<65x13xf32>, tensor<65x13xf32>
  // bf16 gradient: 845*4 + 845*2 + 845*4 = 8450 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=65, j=13}; flops: 2535; bytes: 8450}}
  %1 = rtx.sgd_update %p, %gb lr 1.0e-01 weight_decay 1.0e-02 : tensor<65x13xf32>, tensor<65x13xbf16>
  return
}
