// RUN: rtx-opt %s -split-input-file -rtx-propagate-sharding | FileCheck %s
// RUN: rtx-opt %s -split-input-file '-rtx-propagate-sharding=debug-origin=true' | FileCheck %s --check-prefix=ORIGIN

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// Megatron MLP seeds: batch over dp, fc1 column-parallel, fc2 row-parallel.
// The hidden activation is split over both; the contracted dimension of fc2
// is not a result dimension, so its output is split over dp only.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: -> (tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"dp"], [{{\]\]}}>})
// CHECK: rtx.param "fc1.bias" {{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"tp"{{\]\]}}>}
// CHECK: rtx.linear {{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"dp"], ["tp"{{\]\]}}>}
// CHECK: rtx.gelu {{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"dp"], ["tp"{{\]\]}}>}
// CHECK: rtx.linear {{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"dp"], [{{\]\]}}>}
// ORIGIN-LABEL: func.func @megatron_mlp
// ORIGIN: rtx.gelu {{.*}}rtx.sharding_origin = "propagated through 'rtx.gelu'
func.func @megatron_mlp(%x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>}) -> tensor<8x13xf32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>} : tensor<6x13xf32>
  %b1 = rtx.param "fc1.bias" zeros : tensor<6xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<8x13xf32>, tensor<6x13xf32>, tensor<6xf32> -> tensor<8x6xf32>
  %a = rtx.gelu %h : tensor<8x6xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>} : tensor<13x6xf32>
  %y = rtx.linear %a, %w2 : tensor<8x6xf32>, tensor<13x6xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A head split: [B, S, H*D] split over tp on the merged dimension becomes
// [B, S, H, D] split on H (the major factor), then [B, H, S, D] after the
// transpose; and back.
// CHECK-LABEL: func.func @head_split
// CHECK: rtx.reshape {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}], [], ["tp"], [{{\]\]}}>} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK: rtx.transpose {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}], ["tp"], [], [{{\]\]}}>}
// CHECK: rtx.attention {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}], ["tp"], [], [{{\]\]}}>}
// CHECK: rtx.reshape {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}], [], ["tp"{{\]\]}}>} : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
func.func @head_split(%q: tensor<2x8x64xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], [], ["tp"]]>}) -> tensor<2x8x64xf32> {
  %r = rtx.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %t = rtx.transpose %r [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %a = rtx.attention %t, %t, %t causal : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %b = rtx.transpose %a [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  %m = rtx.reshape %b : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %m : tensor<2x8x64xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// Conflicts resolve deterministically: a seed beats a propagated sharding,
// and among seeds the first operand wins. A dimension the axis does not
// divide (7) stays replicated; the softmax dimension stays whole.
// CHECK-LABEL: func.func @conflicts
// CHECK: rtx.add {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}"tp"], [{{\]\]}}>}
// CHECK: rtx.softmax {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}"tp"], [{{\]\]}}>}
// CHECK: rtx.exp {{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[}}{{\]\]}}>} : tensor<7xf32>
func.func @conflicts(%a: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>},
                     %b: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                     %c: tensor<7xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> (tensor<4x6xf32>, tensor<7xf32>) {
  %s = rtx.add %a, %b : tensor<4x6xf32>
  %m = rtx.softmax %s dim 1 : tensor<4x6xf32>
  %e = rtx.exp %c : tensor<7xf32>
  return %m, %e : tensor<4x6xf32>, tensor<7xf32>
}
