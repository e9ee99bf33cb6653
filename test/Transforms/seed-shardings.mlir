// RUN: rtx-opt %s -split-input-file -rtx-seed-shardings | FileCheck %s
// RUN: rtx-opt %s -split-input-file '-rtx-seed-shardings=seed-hints=q_proj:column,o_proj:row' | FileCheck %s --check-prefix=HINTS
// RUN: rtx-opt %s -split-input-file -rtx-autodiff -rtx-optimizer -rtx-seed-shardings | FileCheck %s --check-prefix=STATE

// Megatron's MLP pair, found by structure (the names say nothing): the
// linear feeding the gelu is column-parallel (weight and bias split along
// the output features), the one after it row-parallel (weight split along
// the input features; its bias is added once, after the reduction).
// CHECK-LABEL: func.func @mlp_pair
// CHECK: rtx.param "up" {{.*}}{rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>}
// CHECK: rtx.param "up_bias" {{.*}}{rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\]\]}}>}
// CHECK: rtx.param "down" {{.*}}{rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>}
// CHECK: rtx.param "down_bias" zeros :
// The optimizer state follows its parameter.
// STATE-LABEL: func.func @mlp_pair
// STATE-SAME: rtx.param = "up", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>, rtx.state = "param:up"
// STATE-SAME: {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>, rtx.state = "exp_avg:up"}
// STATE-SAME: {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>, rtx.state = "exp_avg_sq:down"}
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @mlp_pair(%x: tensor<8x16xf32>) -> tensor<f32> {
  %w1 = rtx.param "up" normal(0.0, 0.1) : tensor<32x16xf32>
  %b1 = rtx.param "up_bias" zeros : tensor<32xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %a = rtx.gelu %h : tensor<8x32xf32>
  %w2 = rtx.param "down" normal(0.0, 0.1) : tensor<16x32xf32>
  %b2 = rtx.param "down_bias" zeros : tensor<16xf32>
  %y = rtx.linear %a, %w2, %b2 : tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention: q, k and v reach the output projection through the heads'
// reshape and transpose, rope and rtx.attention; a SiLU-gated MLP through
// silu and mul. Norms and residuals are outside both regions.
// CHECK-LABEL: func.func @attention_and_swiglu
// CHECK: rtx.param "q" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "k" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "v" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "o" {{.*}}{{\[\[\], \["tp"\]\]}}
// CHECK: rtx.param "norm" ones :
// CHECK: rtx.param "gate" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "up" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "down" {{.*}}{{\[\[\], \["tp"\]\]}}
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @attention_and_swiglu(%x: tensor<2x8x32xf32>) -> tensor<f32> {
  %wq = rtx.param "q" normal(0.0, 0.02) : tensor<32x32xf32>
  %q0 = rtx.linear %x, %wq : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  %wk = rtx.param "k" normal(0.0, 0.02) : tensor<32x32xf32>
  %k0 = rtx.linear %x, %wk : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  %wv = rtx.param "v" normal(0.0, 0.02) : tensor<32x32xf32>
  %v0 = rtx.linear %x, %wv : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  %q1 = rtx.reshape %q0 : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %q2 = rtx.transpose %q1 [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %q = rtx.rope %q2 theta 10000.0 : tensor<2x4x8x8xf32>
  %k1 = rtx.reshape %k0 : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %k = rtx.transpose %k1 [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %v1 = rtx.reshape %v0 : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %v = rtx.transpose %v1 [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %a = rtx.attention %q, %k, %v causal : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %a1 = rtx.transpose %a [0, 2, 1, 3] : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
  %a2 = rtx.reshape %a1 : tensor<2x8x4x8xf32> -> tensor<2x8x32xf32>
  %wo = rtx.param "o" normal(0.0, 0.02) : tensor<32x32xf32>
  %o = rtx.linear %a2, %wo : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  %r = rtx.add %x, %o : tensor<2x8x32xf32>
  %wn = rtx.param "norm" ones : tensor<32xf32>
  %n = rtx.rmsnorm %r, %wn eps 1.0e-06 : tensor<2x8x32xf32>, tensor<32xf32>
  %wg = rtx.param "gate" normal(0.0, 0.02) : tensor<64x32xf32>
  %g0 = rtx.linear %n, %wg : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %g = rtx.silu %g0 : tensor<2x8x64xf32>
  %wu = rtx.param "up" normal(0.0, 0.02) : tensor<64x32xf32>
  %u = rtx.linear %n, %wu : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %gu = rtx.mul %g, %u : tensor<2x8x64xf32>
  %wd = rtx.param "down" normal(0.0, 0.02) : tensor<32x64xf32>
  %d = rtx.linear %gu, %wd : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  %y = rtx.add %r, %d : tensor<2x8x32xf32>
  %l = rtx.reduce mean %y dims [0, 1, 2] : tensor<2x8x32xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Matmuls over parameters ([K, N], or [N, K] with transpose_rhs) pair the
// same way: N is split in the first, K in the second.
// CHECK-LABEL: func.func @matmul_pair
// CHECK: rtx.param "w1" {{.*}}{{\[\[\], \["tp"\]\]}}
// CHECK: rtx.param "w2" {{.*}}{{\[\[\], \["tp"\]\]}}
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @matmul_pair(%x: tensor<8x16xf32>) -> tensor<f32> {
  %w1 = rtx.param "w1" normal(0.0, 0.1) : tensor<16x32xf32>
  %h = rtx.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %a = rtx.relu %h : tensor<8x32xf32>
  %w2 = rtx.param "w2" normal(0.0, 0.1) : tensor<16x32xf32>
  %y = rtx.matmul %a, %w2 transpose_rhs : tensor<8x32xf32>, tensor<16x32xf32> -> tensor<8x16xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Megatron alternates: in a chain of three layers the middle one is row-
// parallel to the first; the third, fed by a row-parallel layer, is not
// paired (its input is whole after the reduction).
// CHECK-LABEL: func.func @three_layers
// CHECK: rtx.param "a" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "b" {{.*}}{{\[\[\], \["tp"\]\]}}
// CHECK: rtx.param "c" normal
// CHECK-NOT: rtx.sharding
// CHECK: return
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @three_layers(%x: tensor<8x16xf32>) -> tensor<f32> {
  %wa = rtx.param "a" normal(0.0, 0.1) : tensor<16x16xf32>
  %ha = rtx.linear %x, %wa : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %aa = rtx.tanh %ha : tensor<8x16xf32>
  %wb = rtx.param "b" normal(0.0, 0.1) : tensor<16x16xf32>
  %hb = rtx.linear %aa, %wb : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %ab = rtx.tanh %hb : tensor<8x16xf32>
  %wc = rtx.param "c" normal(0.0, 0.1) : tensor<16x16xf32>
  %hc = rtx.linear %ab, %wc : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %l = rtx.reduce mean %hc dims [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A language model's vocabulary, found by its use: the head producing the
// cross-entropy's logits and the embedding table over the same vocabulary
// (tied here, as in GPT-2) are split along it; data inputs over dp along
// the batch.
// CHECK-LABEL: func.func @language_model
// CHECK: rtx.input "ids" {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\["dp"\], \[\]\]}}>}
// CHECK: rtx.input "labels" {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\["dp"\], \[\]\]}}>}
// CHECK: rtx.param "tokens" {{.*}}{rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\["tp"\], \[\]\]}}>}
rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

func.func @language_model() -> tensor<f32> {
  %ids = rtx.input "ids" : tensor<4x8xi32>
  %labels = rtx.input "labels" : tensor<4x8xi32>
  %table = rtx.param "tokens" normal(0.0, 0.02) : tensor<44x16xf32>
  %x = rtx.embedding %table, %ids : tensor<44x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
  %logits = rtx.linear %x, %table : tensor<4x8x16xf32>, tensor<44x16xf32> -> tensor<4x8x44xf32>
  %l = rtx.cross_entropy %logits, %labels : tensor<4x8x44xf32>, tensor<4x8xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Names are only hints: q_proj:column splits a layer structure does not
// pair (a softmax over the features is not elementwise), and its bias;
// o_proj:row another. Hand-written seeds stay; without hints, o_proj is
// column-parallel to the row-parallel layer seeded by hand.
// CHECK-LABEL: func.func @hinted
// CHECK: rtx.param "layers.0.q_proj.weight" normal(0.000000e+00, 1.000000e-01) :
// CHECK: rtx.param "layers.0.q_proj.bias" zeros :
// CHECK: rtx.param "layers.0.o_proj.weight" {{.*}}{{\[\["tp"\], \[\]\]}}
// CHECK: rtx.param "kept" {{.*}}{{\[\[\], \["tp"\]\]}}
// HINTS-LABEL: func.func @hinted
// HINTS: rtx.param "layers.0.q_proj.weight" {{.*}}{{\[\["tp"\], \[\]\]}}
// HINTS: rtx.param "layers.0.q_proj.bias" {{.*}}{{\[\["tp"\]\]}}
// HINTS: rtx.param "layers.0.o_proj.weight" {{.*}}{{\[\[\], \["tp"\]\]}}
// HINTS: rtx.param "kept" {{.*}}{{\[\[\], \["tp"\]\]}}
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @hinted(%x: tensor<8x16xf32>) -> tensor<f32> {
  %w = rtx.param "layers.0.q_proj.weight" normal(0.0, 0.1) : tensor<16x16xf32>
  %b = rtx.param "layers.0.q_proj.bias" zeros : tensor<16xf32>
  %h = rtx.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %n = rtx.softmax %h dim 1 : tensor<8x16xf32>
  %wo = rtx.param "layers.0.o_proj.weight" normal(0.0, 0.1) : tensor<16x16xf32>
  %o = rtx.linear %n, %wo : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %wk = rtx.param "kept" normal(0.0, 0.1) {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<16x16xf32>
  %y = rtx.linear %o, %wk : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A residual stream is not a column-parallel region: the linear after an
// addition of a whole value is not paired.
// CHECK-LABEL: func.func @residual
// CHECK-NOT: rtx.sharding
// CHECK: return
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @residual(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w1 = rtx.param "a" normal(0.0, 0.1) : tensor<16x16xf32>
  %h = rtx.linear %x, %w1 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %r = rtx.add %x, %h : tensor<8x16xf32>
  %w2 = rtx.param "b" normal(0.0, 0.1) : tensor<16x16xf32>
  %y = rtx.linear %r, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
