// RUN: rtx-opt %s -split-input-file -rtx-test-op-interfaces -verify-diagnostics

// Sharding rules (ShardingRuleOpInterface) and costs (CostOpInterface) of
// every model op, as printed by -rtx-test-op-interfaces:
//   rule: (operand factors) -> (result factors) {factor=size, ...}
//         [reduction={...}] [need_replication={...}]; flops: F; bytes: B
// Factors are named i, j, k, ... in creation order; `j*k` is a dimension made
// of two factors (major to minor); `1` is a dimension without a factor.
// FLOPs are computed by hand from the formulas in RTXModelOps.td (and
// RTXCost.cpp where the op description gives none); bytes are the sizes of all
// operands and results (f32: 4 bytes, bf16: 2, i32: 4, i1: 1).

//===----------------------------------------------------------------------===//
// Values that enter the model
//===----------------------------------------------------------------------===//

func.func @param_rule() {
  // 65*13*4 = 3380 bytes.
  // expected-remark @+1 {{rule: () -> ([i, j]) {i=65, j=13}; flops: 0; bytes: 3380}}
  %0 = rtx.param "w" normal(0.0, 0.02) : tensor<65x13xf32>
  return
}

// -----

func.func @input_rule() {
  // 8*13*4 = 416 bytes.
  // expected-remark @+1 {{rule: () -> ([i, j]) {i=8, j=13}; flops: 0; bytes: 416}}
  %0 = rtx.input "tokens" : tensor<8x13xi32>
  return
}

// -----

func.func @constant_rule() {
  // expected-remark @+1 {{rule: () -> ([i]) {i=7}; flops: 0; bytes: 28}}
  %0 = rtx.constant dense<1.0> : tensor<7xf32>
  // A scalar has no factor at all.
  // expected-remark @+1 {{rule: () -> ([]) {}; flops: 0; bytes: 4}}
  %1 = rtx.constant dense<1.0> : tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Contractions: 2*M*N*K (times the batch) FLOPs; K is the reduction factor.
//===----------------------------------------------------------------------===//

func.func @matmul_rule(%a: tensor<7x13xf32>, %b: tensor<13x65xf32>) -> tensor<7x65xf32> {
  // 2*7*65*13 = 11830 FLOPs; (91 + 845 + 455)*4 = 5564 bytes.
  // expected-remark @+1 {{rule: ([i, k], [k, j]) -> ([i, j]) {i=7, j=65, k=13} reduction={k}; flops: 11830; bytes: 5564}}
  %0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @matmul_transpose_lhs_rule(%a: tensor<13x7xf32>, %b: tensor<13x65xf32>) -> tensor<7x65xf32> {
  // K is the lhs's first dimension: still 2*7*65*13 = 11830 FLOPs.
  // expected-remark @+1 {{rule: ([k, i], [k, j]) -> ([i, j]) {i=7, j=65, k=13} reduction={k}; flops: 11830; bytes: 5564}}
  %0 = rtx.matmul %a, %b transpose_lhs : tensor<13x7xf32>, tensor<13x65xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @matmul_transpose_rhs_rule(%a: tensor<7x13xf32>, %b: tensor<65x13xf32>) -> tensor<7x65xf32> {
  // expected-remark @+1 {{rule: ([i, k], [j, k]) -> ([i, j]) {i=7, j=65, k=13} reduction={k}; flops: 11830; bytes: 5564}}
  %0 = rtx.matmul %a, %b transpose_rhs : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @matmul_transpose_both_bf16_rule(%a: tensor<13x7xbf16>, %b: tensor<65x13xbf16>) -> tensor<7x65xbf16> {
  // (91 + 845 + 455)*2 = 2782 bytes.
  // expected-remark @+1 {{rule: ([k, i], [j, k]) -> ([i, j]) {i=7, j=65, k=13} reduction={k}; flops: 11830; bytes: 2782}}
  %0 = rtx.matmul %a, %b transpose_lhs transpose_rhs : tensor<13x7xbf16>, tensor<65x13xbf16> -> tensor<7x65xbf16>
  return %0 : tensor<7x65xbf16>
}

// -----

func.func @batch_matmul_rule(%a: tensor<5x7x13xf32>, %b: tensor<5x13x65xf32>) -> tensor<5x7x65xf32> {
  // 2*5*7*65*13 = 59150 FLOPs; (455 + 4225 + 2275)*4 = 27820 bytes.
  // expected-remark @+1 {{rule: ([i, j, l], [i, l, k]) -> ([i, j, k]) {i=5, j=7, k=65, l=13} reduction={l}; flops: 59150; bytes: 27820}}
  %0 = rtx.batch_matmul %a, %b : tensor<5x7x13xf32>, tensor<5x13x65xf32> -> tensor<5x7x65xf32>
  return %0 : tensor<5x7x65xf32>
}

// -----

func.func @batch_matmul_scores_rule(%q: tensor<2x12x13x32xf32>, %k: tensor<2x12x13x32xf32>) -> tensor<2x12x13x13xf32> {
  // B = 2*12, M = N = 13, K = 32: 2*24*13*13*32 = 259584 FLOPs;
  // (9984 + 9984 + 4056)*4 = 96096 bytes.
  // expected-remark @+1 {{rule: ([i, j, k, m], [i, j, l, m]) -> ([i, j, k, l]) {i=2, j=12, k=13, l=13, m=32} reduction={m}; flops: 259584; bytes: 96096}}
  %0 = rtx.batch_matmul %q, %k transpose_rhs : tensor<2x12x13x32xf32>, tensor<2x12x13x32xf32> -> tensor<2x12x13x13xf32>
  return %0 : tensor<2x12x13x13xf32>
}

// -----

func.func @linear_with_bias_rule(%x: tensor<2x7x13xf32>, %w: tensor<65x13xf32>, %b: tensor<65xf32>) -> tensor<2x7x65xf32> {
  // T = 2*7 = 14: 2*14*13*65 + 14*65 = 23660 + 910 = 24570 FLOPs;
  // (182 + 845 + 65 + 910)*4 = 8008 bytes.
  // expected-remark @+1 {{rule: ([i, j, l], [k, l], [k]) -> ([i, j, k]) {i=2, j=7, k=65, l=13} reduction={l}; flops: 24570; bytes: 8008}}
  %0 = rtx.linear %x, %w, %b : tensor<2x7x13xf32>, tensor<65x13xf32>, tensor<65xf32> -> tensor<2x7x65xf32>
  return %0 : tensor<2x7x65xf32>
}

// -----

func.func @linear_without_bias_rule(%x: tensor<7x13xf32>, %w: tensor<65x13xf32>) -> tensor<7x65xf32> {
  // 2*7*13*65 = 11830 FLOPs.
  // expected-remark @+1 {{rule: ([i, k], [j, k]) -> ([i, j]) {i=7, j=65, k=13} reduction={k}; flops: 11830; bytes: 5564}}
  %0 = rtx.linear %x, %w : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise: one factor per dimension shared by every operand and result.
//===----------------------------------------------------------------------===//

// 1 FLOP per element: 7*13 = 91; 3*91*4 = 1092 bytes.
func.func @binary_rules(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) {
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %0 = rtx.add %x, %y : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %1 = rtx.sub %x, %y : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %2 = rtx.mul %x, %y : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %3 = rtx.div %x, %y : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %4 = rtx.maximum %x, %y : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 1092}}
  %5 = rtx.minimum %x, %y : tensor<7x13xf32>
  return
}

// -----

// FLOPs per element from RTXModelOps.td: 1 for neg, exp, log, sqrt, tanh,
// relu; 2 for rsqrt; 3 for sigmoid; 4 for silu. 2*91*4 = 728 bytes.
func.func @unary_rules(%x: tensor<7x13xf32>) {
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %0 = rtx.neg %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %1 = rtx.exp %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %2 = rtx.log %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %3 = rtx.sqrt %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 182; bytes: 728}}
  %4 = rtx.rsqrt %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %5 = rtx.tanh %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 273; bytes: 728}}
  %6 = rtx.sigmoid %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 728}}
  %7 = rtx.relu %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 364; bytes: 728}}
  %8 = rtx.silu %x : tensor<7x13xf32>
  return
}

// -----

// 8 FLOPs per element for both forms (RTXCost.cpp): 8*91 = 728.
func.func @gelu_rules(%x: tensor<7x13xf32>) {
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 728; bytes: 728}}
  %0 = rtx.gelu %x : tensor<7x13xf32>
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 728; bytes: 728}}
  %1 = rtx.gelu %x approximate : tensor<7x13xf32>
  return
}

// -----

func.func @convert_rule(%x: tensor<7x13xf32>) {
  // Data movement: 0 FLOPs; 91*4 + 91*2 = 546 bytes.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 0; bytes: 546}}
  %0 = rtx.convert %x : tensor<7x13xf32> -> tensor<7x13xbf16>
  return
}

// -----

func.func @compare_rule(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) {
  // 1 FLOP per element; 2*91*4 + 91*1 = 819 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=7, j=13}; flops: 91; bytes: 819}}
  %0 = rtx.compare lt, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  return
}

// -----

func.func @where_rule(%m: tensor<13x13xi1>, %x: tensor<13x13xf32>, %y: tensor<13x13xf32>) {
  // A select is data movement: 0 FLOPs; 169 + 3*169*4 = 2197 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=13, j=13}; flops: 0; bytes: 2197}}
  %0 = rtx.where %m, %x, %y : tensor<13x13xi1>, tensor<13x13xf32>
  return
}

// -----

func.func @masked_fill_rule(%x: tensor<2x13xf32>, %m: tensor<2x13xi1>) {
  // 0 FLOPs; 26*4 + 26 + 26*4 = 234 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, j]) -> ([i, j]) {i=2, j=13}; flops: 0; bytes: 234}}
  %0 = rtx.masked_fill %x, %m, 0xFFF0000000000000 : tensor<2x13xf32>, tensor<2x13xi1>
  return
}

// -----

func.func @dropout_rule(%x: tensor<7x13xf32>) {
  // 2 FLOPs per element (RTXCost.cpp): 182.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, j]) {i=7, j=13}; flops: 182; bytes: 728}}
  %0 = rtx.dropout %x rate 0.1 seed 42 : tensor<7x13xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalisation, softmax, rope, attention
//===----------------------------------------------------------------------===//

func.func @layernorm_with_bias_rule(%x: tensor<2x7x65xf32>, %g: tensor<65xf32>, %b: tensor<65xf32>) {
  // The normalised dimension stays whole. (7 + 1)*910 = 7280 FLOPs;
  // (910 + 65 + 65 + 910)*4 = 7800 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [k], [k]) -> ([i, j, k]) {i=2, j=7, k=65} need_replication={k}; flops: 7280; bytes: 7800}}
  %0 = rtx.layernorm %x, %g, %b eps 1.0e-05 : tensor<2x7x65xf32>, tensor<65xf32>, tensor<65xf32>
  return
}

// -----

func.func @layernorm_without_bias_rule(%x: tensor<2x7x65xf32>, %g: tensor<65xf32>) {
  // 7*910 = 6370 FLOPs; (910 + 65 + 910)*4 = 7540 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [k]) -> ([i, j, k]) {i=2, j=7, k=65} need_replication={k}; flops: 6370; bytes: 7540}}
  %0 = rtx.layernorm %x, %g eps 1.0e-05 : tensor<2x7x65xf32>, tensor<65xf32>
  return
}

// -----

func.func @rmsnorm_rule(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) {
  // 5*1664 = 8320 FLOPs; (1664 + 64 + 1664)*4 = 13568 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [k]) -> ([i, j, k]) {i=2, j=13, k=64} need_replication={k}; flops: 8320; bytes: 13568}}
  %0 = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @softmax_rule(%x: tensor<2x12x13x13xf32>) {
  // Only the softmax dimension must stay whole. 5*4056 = 20280 FLOPs.
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=12, k=13, l=13} need_replication={l}; flops: 20280; bytes: 32448}}
  %0 = rtx.softmax %x dim 3 : tensor<2x12x13x13xf32>
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=12, k=13, l=13} need_replication={j}; flops: 20280; bytes: 32448}}
  %1 = rtx.softmax %x dim 1 : tensor<2x12x13x13xf32>
  return
}

// -----

func.func @rope_rule(%x: tensor<2x8x13x64xf32>) {
  // Sequence and head_dim stay whole. 3*13312 = 39936 FLOPs.
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=8, k=13, l=64} need_replication={k, l}; flops: 39936; bytes: 106496}}
  %0 = rtx.rope %x theta 1.0e+04 : tensor<2x8x13x64xf32>
  return
}

// -----

// Hq = 8 query heads over Hkv = 2 key/value heads: a query head dimension is
// (kv head j, head within the group k). Causal: P = 16*17/2 = 136 pairs,
// B*Hq*P = 2*8*136 = 2176: 4*2176*64 + 5*2176 = 557056 + 10880 = 567936 FLOPs;
// (16384 + 4096 + 4096 + 16384)*4 = 163840 bytes.
func.func @attention_grouped_causal_rule(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) -> ([i, j*k, l, n]) {i=2, j=2, k=4, l=16, m=16, n=64} need_replication={l, m, n}; flops: 567936; bytes: 163840}}
  %0 = rtx.attention %q, %k, %v causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32> -> tensor<2x8x16x64xf32>
  return
}

// -----

// Not causal: the query sequence may be split. P = 16*16 = 256,
// B*Hq*P = 4096: 4*4096*64 + 5*4096 = 1048576 + 20480 = 1069056 FLOPs.
func.func @attention_grouped_non_causal_rule(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) -> ([i, j*k, l, n]) {i=2, j=2, k=4, l=16, m=16, n=64} need_replication={m, n}; flops: 1069056; bytes: 163840}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32> -> tensor<2x8x16x64xf32>
  return
}

// -----

// Hq = Hkv: no group factor. P = 13*13 = 169, B*Hq*P = 676:
// 4*676*8 + 5*676 = 21632 + 3380 = 25012 FLOPs; 4*416*4 = 6656 bytes.
func.func @attention_multi_head_rule(%q: tensor<1x4x13x8xf32>, %k: tensor<1x4x13x8xf32>, %v: tensor<1x4x13x8xf32>) {
  // expected-remark @+1 {{rule: ([i, j, k, m], [i, j, l, m], [i, j, l, m]) -> ([i, j, k, m]) {i=1, j=4, k=13, l=13, m=8} need_replication={l, m}; flops: 25012; bytes: 6656}}
  %0 = rtx.attention %q, %k, %v : tensor<1x4x13x8xf32>, tensor<1x4x13x8xf32>, tensor<1x4x13x8xf32> -> tensor<1x4x13x8xf32>
  return
}

// -----

// Sq = 5, Skv = 13: P = 65, B*Hq*P = 2*8*65 = 1040:
// 4*1040*16 + 5*1040 = 66560 + 5200 = 71760 FLOPs;
// (1280 + 832 + 832 + 1280)*4 = 16896 bytes.
func.func @attention_cross_lengths_rule(%q: tensor<2x8x5x16xf32>, %k: tensor<2x2x13x16xf32>, %v: tensor<2x2x13x16xf32>) {
  // expected-remark @+1 {{rule: ([i, j*k, l, n], [i, j, m, n], [i, j, m, n]) -> ([i, j*k, l, n]) {i=2, j=2, k=4, l=5, m=13, n=16} need_replication={m, n}; flops: 71760; bytes: 16896}}
  %0 = rtx.attention %q, %k, %v : tensor<2x8x5x16xf32>, tensor<2x2x13x16xf32>, tensor<2x2x13x16xf32> -> tensor<2x8x5x16xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

func.func @embedding_rule(%t: tensor<65x16xf32>, %ids: tensor<8x13xi32>) {
  // A split vocabulary leaves partial sums: the vocab factor is a reduction.
  // Gather: 0 FLOPs; (1040 + 104 + 1664)*4 = 11232 bytes.
  // expected-remark @+1 {{rule: ([i, j], [k, l]) -> ([k, l, j]) {i=65, j=16, k=8, l=13} reduction={i}; flops: 0; bytes: 11232}}
  %0 = rtx.embedding %t, %ids : tensor<65x16xf32>, tensor<8x13xi32> -> tensor<8x13x16xf32>
  return
}

// -----

func.func @cross_entropy_rule(%l: tensor<8x13x65xf32>, %y: tensor<8x13xi32>) {
  // Tokens are reduced into the mean; the vocabulary stays whole.
  // 6 FLOPs per logit: 6*6760 = 40560; 6760*4 + 104*4 + 4 = 27460 bytes.
  // expected-remark @+1 {{rule: ([i, j, k], [i, j]) -> ([]) {i=8, j=13, k=65} reduction={i, j} need_replication={k}; flops: 40560; bytes: 27460}}
  %0 = rtx.cross_entropy %l, %y ignore_index -1 : tensor<8x13x65xf32>, tensor<8x13xi32> -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Shape manipulation: 0 FLOPs (data movement), except reduce.
//===----------------------------------------------------------------------===//

func.func @reshape_head_split_rule(%x: tensor<2x16x64xf32>) {
  // 64 = 4*16: the split dimension is two factors. 2*2048*4 = 16384 bytes.
  // expected-remark @+1 {{rule: ([i, j, k*l]) -> ([i, j, k, l]) {i=2, j=16, k=4, l=16}; flops: 0; bytes: 16384}}
  %0 = rtx.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  return
}

// -----

func.func @reshape_head_merge_rule(%x: tensor<2x13x4x16xf32>) {
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, j, k*l]) {i=2, j=13, k=4, l=16}; flops: 0; bytes: 13312}}
  %0 = rtx.reshape %x : tensor<2x13x4x16xf32> -> tensor<2x13x64xf32>
  return
}

// -----

func.func @reshape_non_factorable_rule(%x: tensor<6x4xf32>) {
  // Neither 6 nor 4 divides the other: one need-replication factor of size
  // 6*4 = 24 covers both sides. 2*24*4 = 192 bytes.
  // expected-remark @+1 {{rule: ([i, j]) -> ([k, l]) {i=6, j=4, k=4, l=6} need_replication={i, j, k, l}; flops: 0; bytes: 192}}
  %0 = rtx.reshape %x : tensor<6x4xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @reshape_partly_factorable_rule(%x: tensor<2x6x4xf32>) {
  // The leading 2 factors; the rest (6*4 = 24) does not.
  // expected-remark @+1 {{rule: ([i, j, k]) -> ([i, l, m]) {i=2, j=6, k=4, l=4, m=6} need_replication={j, k, l, m}; flops: 0; bytes: 384}}
  %0 = rtx.reshape %x : tensor<2x6x4xf32> -> tensor<2x4x6xf32>
  return
}

// -----

func.func @reshape_unit_dims_rule(%x: tensor<1x7x13xf32>) {
  // Size-1 dimensions take no factor.
  // expected-remark @+1 {{rule: ([1, i, j]) -> ([i, 1, j]) {i=7, j=13}; flops: 0; bytes: 728}}
  %0 = rtx.reshape %x : tensor<1x7x13xf32> -> tensor<7x1x13xf32>
  return
}

// -----

func.func @transpose_rule(%x: tensor<2x7x3x5xf32>) {
  // expected-remark @+1 {{rule: ([i, j, k, l]) -> ([i, k, j, l]) {i=2, j=7, k=3, l=5}; flops: 0; bytes: 1680}}
  %0 = rtx.transpose %x [0, 2, 1, 3] : tensor<2x7x3x5xf32> -> tensor<2x3x7x5xf32>
  return
}

// -----

func.func @slice_rule(%x: tensor<7x65xf32>) {
  // A sliced dimension gets separate need-replication factors on each side;
  // a whole dimension is shared. (455 + 325)*4 = 3120 bytes.
  // expected-remark @+1 {{rule: ([i, k]) -> ([j, k]) {i=7, j=5, k=65} need_replication={i, j}; flops: 0; bytes: 3120}}
  %0 = rtx.slice %x [2:7, 0:65] : tensor<7x65xf32> -> tensor<5x65xf32>
  return
}

// -----

func.func @split_rule(%x: tensor<8x13x24xf32>) {
  // 2*2496*4 = 19968 bytes.
  // expected-remark @+1 {{rule: ([i, j, k]) -> ([i, j, l], [i, j, m], [i, j, n]) {i=8, j=13, k=24, l=8, m=8, n=8} need_replication={k, l, m, n}; flops: 0; bytes: 19968}}
  %0:3 = rtx.split %x dim 2 : tensor<8x13x24xf32> -> tensor<8x13x8xf32>, tensor<8x13x8xf32>, tensor<8x13x8xf32>
  return
}

// -----

func.func @concat_rule(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) {
  // (32 + 12 + 44)*4 = 352 bytes.
  // expected-remark @+1 {{rule: ([i, j], [i, k]) -> ([i, l]) {i=4, j=8, k=3, l=11} need_replication={j, k, l}; flops: 0; bytes: 352}}
  %0 = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
  return
}

// -----

func.func @broadcast_new_dims_rule(%b: tensor<65xf32>) {
  // New result dimensions get their own factors. (65 + 910)*4 = 3900 bytes.
  // expected-remark @+1 {{rule: ([i]) -> ([j, k, i]) {i=65, j=2, k=7}; flops: 0; bytes: 3900}}
  %0 = rtx.broadcast %b dims [2] : tensor<65xf32> -> tensor<2x7x65xf32>
  return
}

// -----

func.func @broadcast_repeated_unit_dim_rule(%x: tensor<7x1xf32>) {
  // A repeated size-1 dimension takes no factor. (7 + 5915)*4 = 23688 bytes.
  // expected-remark @+1 {{rule: ([i, 1]) -> ([i, j, k]) {i=7, j=13, k=65}; flops: 0; bytes: 23688}}
  %0 = rtx.broadcast %x dims [0, 2] : tensor<7x1xf32> -> tensor<7x13x65xf32>
  return
}

// -----

func.func @reduce_sum_rule(%x: tensor<7x13xf32>) {
  // 1 FLOP per input element: 91; (91 + 7)*4 = 392 bytes.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i]) {i=7, j=13} reduction={j}; flops: 91; bytes: 392}}
  %0 = rtx.reduce sum %x dims [1] : tensor<7x13xf32> -> tensor<7xf32>
  return
}

// -----

func.func @reduce_max_keepdim_rule(%x: tensor<7x13xf32>) {
  // A max cannot leave partial sums: the reduced dimension stays whole. The
  // kept size-1 dimension has no factor.
  // expected-remark @+1 {{rule: ([i, j]) -> ([i, 1]) {i=7, j=13} need_replication={j}; flops: 91; bytes: 392}}
  %0 = rtx.reduce max %x dims [1] keepdim : tensor<7x13xf32> -> tensor<7x1xf32>
  return
}

// -----

func.func @reduce_mean_keepdim_two_dims_rule(%x: tensor<2x7x13xf32>) {
  // 182 FLOPs; (182 + 7)*4 = 756 bytes.
  // expected-remark @+1 {{rule: ([i, j, k]) -> ([1, j, 1]) {i=2, j=7, k=13} reduction={i, k}; flops: 182; bytes: 756}}
  %0 = rtx.reduce mean %x dims [0, 2] keepdim : tensor<2x7x13xf32> -> tensor<1x7x1xf32>
  return
}

// -----

func.func @reduce_min_to_scalar_rule(%x: tensor<2x7x13xf32>) {
  // (182 + 1)*4 = 732 bytes.
  // expected-remark @+1 {{rule: ([i, j, k]) -> ([]) {i=2, j=7, k=13} need_replication={i, j, k}; flops: 182; bytes: 732}}
  %0 = rtx.reduce min %x dims [0, 1, 2] : tensor<2x7x13xf32> -> tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Ops without the interfaces get no remark.
//===----------------------------------------------------------------------===//

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @collectives_have_no_rule(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = rtx.all_gather_start %x on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x8xf32> -> !rtx.token<tensor<4x32xf32>>
  %1 = rtx.wait %t : !rtx.token<tensor<4x32xf32>> -> tensor<4x32xf32>
  return %0 : tensor<4x8xf32>
}
