// RUN: rtx-opt %s -split-input-file -rtx-seed-shardings | FileCheck %s
// RUN: not rtx-opt %s -split-input-file '-rtx-seed-shardings=strict-tp=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=STRICT

// Attention as Hugging Face's Llama writes it: separate q/k/v projections,
// rotary embeddings by rotate_half (slices of each head's features, a
// negation and a concat, times cos/sin tables broadcast from constants),
// then rtx.attention with grouped key/value heads. The walk from o_proj
// back through the attention, the rotary arithmetic and the head reshapes
// reaches q/k/v: column-parallel by head, o_proj row-parallel.
// CHECK-LABEL: func.func @llama_attention
// CHECK-DAG: rtx.param "wq" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// CHECK-DAG: rtx.param "wk" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// CHECK-DAG: rtx.param "wv" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// CHECK-DAG: rtx.param "wo" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @llama_attention(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %wq = rtx.param "wq" normal(0.0, 0.02) : tensor<32x32xf32>
  %wk = rtx.param "wk" normal(0.0, 0.02) : tensor<16x32xf32>
  %wv = rtx.param "wv" normal(0.0, 0.02) : tensor<16x32xf32>
  %wo = rtx.param "wo" normal(0.0, 0.02) : tensor<32x32xf32>
  %q0 = rtx.linear %x, %wq : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  %q1 = rtx.reshape %q0 : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %q = rtx.transpose %q1 [0, 2, 1, 3] : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
  %k0 = rtx.linear %x, %wk : tensor<2x8x32xf32>, tensor<16x32xf32> -> tensor<2x8x16xf32>
  %k1 = rtx.reshape %k0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %k = rtx.transpose %k1 [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
  %v0 = rtx.linear %x, %wv : tensor<2x8x32xf32>, tensor<16x32xf32> -> tensor<2x8x16xf32>
  %v1 = rtx.reshape %v0 : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
  %v = rtx.transpose %v1 [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
  %cos = rtx.constant dense<0.5> : tensor<1x1x8x8xf32>
  %sin = rtx.constant dense<0.25> : tensor<1x1x8x8xf32>
  %cq = rtx.broadcast %cos dims [0, 1, 2, 3] : tensor<1x1x8x8xf32> -> tensor<2x4x8x8xf32>
  %sq = rtx.broadcast %sin dims [0, 1, 2, 3] : tensor<1x1x8x8xf32> -> tensor<2x4x8x8xf32>
  %qa = rtx.slice %q [0:2, 0:4, 0:8, 0:4] : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %qb = rtx.slice %q [0:2, 0:4, 0:8, 4:8] : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %nqb = rtx.neg %qb : tensor<2x4x8x4xf32>
  %qr = rtx.concat %nqb, %qa dim 3 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
  %qc = rtx.mul %q, %cq : tensor<2x4x8x8xf32>
  %qs = rtx.mul %qr, %sq : tensor<2x4x8x8xf32>
  %qrot = rtx.add %qc, %qs : tensor<2x4x8x8xf32>
  %o = rtx.attention %qrot, %k, %v causal : tensor<2x4x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x4x8x8xf32>
  %o1 = rtx.transpose %o [0, 2, 1, 3] : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
  %o2 = rtx.reshape %o1 : tensor<2x8x4x8xf32> -> tensor<2x8x32xf32>
  %y = rtx.linear %o2, %wo : tensor<2x8x32xf32>, tensor<32x32xf32> -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// GPT-2's Conv1D MLP: x W + b with W [in, out] (rtx.matmul) and the bias
// broadcast and added after it. The bias follows its column layer.
// CHECK-LABEL: func.func @conv1d_mlp
// CHECK-DAG: rtx.param "c_fc.weight" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>
// CHECK-DAG: rtx.param "c_fc.bias" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\]\]}}>
// CHECK-DAG: rtx.param "c_proj.weight" {{.*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @conv1d_mlp(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %w1 = rtx.param "c_fc.weight" normal(0.0, 0.02) : tensor<8x32xf32>
  %b1 = rtx.param "c_fc.bias" zeros : tensor<32xf32>
  %w2 = rtx.param "c_proj.weight" normal(0.0, 0.02) : tensor<32x8xf32>
  %h = rtx.matmul %x, %w1 : tensor<16x8xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %bb = rtx.broadcast %b1 dims [1] : tensor<32xf32> -> tensor<16x32xf32>
  %hb = rtx.add %h, %bb : tensor<16x32xf32>
  %a = rtx.gelu %hb : tensor<16x32xf32>
  %y = rtx.matmul %a, %w2 : tensor<16x32xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}

// -----

// strict-tp: a projection no Megatron pair includes (here a lone linear)
// is refused, naming it.
// STRICT: error: parameter "lone" of this rtx.linear stays whole on axis "tp" of size 2: no Megatron pair
// CHECK-LABEL: func.func @lone
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @lone(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %w = rtx.param "lone" normal(0.0, 0.02) : tensor<6x8xf32>
  %y = rtx.linear %x, %w : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
