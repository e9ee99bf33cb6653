// RUN: rtx-opt %s -split-input-file -verify-diagnostics -rtx-pad-vocabulary | FileCheck %s

// GPT-2's tied table, 37 classes on tp=4: padded to 40 where it is used.
// The table and the head read the same concatenation with 3 zero rows,
// seeded as split over tp along the vocabulary; the 3 padded logits are -inf
// before the loss, so the loss and every gradient are the unpadded model's.
// CHECK-LABEL: func.func @tied
// CHECK: %[[TABLE:.*]] = rtx.param "wte"
// CHECK-NEXT: %[[ZEROS:.*]] = rtx.constant dense<0.000000e+00> : tensor<3x16xf32>
// CHECK-NEXT: %[[PADDED:.*]] = rtx.concat %[[TABLE]], %[[ZEROS]] dim 0 {rtx.sharding = #rtx.sharding<@mesh_tp4, {{\[\["tp"\], \[\]\]}}>} : tensor<37x16xf32>, tensor<3x16xf32> -> tensor<40x16xf32>
// CHECK: rtx.embedding %[[PADDED]], %{{.*}} : tensor<40x16xf32>
// CHECK: %[[LOGITS:.*]] = rtx.linear %{{.*}}, %[[PADDED]] : tensor<4x8x16xf32>, tensor<40x16xf32> -> tensor<4x8x40xf32>
// CHECK: %[[MASK:.*]] = rtx.constant dense<[false, {{.*}}, false, true, true, true]> : tensor<40xi1>
// CHECK: %[[WIDE:.*]] = rtx.broadcast %[[MASK]] dims [2] : tensor<40xi1> -> tensor<4x8x40xi1>
// CHECK: %[[MASKED:.*]] = rtx.masked_fill %[[LOGITS]], %[[WIDE]], 0xFFF0000000000000
// CHECK: rtx.cross_entropy %[[MASKED]], %{{.*}} : tensor<4x8x40xf32>
rtx.mesh @mesh_tp4 ["tp"=4]

func.func @tied() -> tensor<f32> {
  %ids = rtx.input "ids" : tensor<4x8xi32>
  %labels = rtx.input "labels" : tensor<4x8xi32>
  %table = rtx.param "wte" normal(0.0, 0.02) : tensor<37x16xf32>
  %x = rtx.embedding %table, %ids : tensor<37x16xf32>, tensor<4x8xi32> -> tensor<4x8x16xf32>
  %logits = rtx.linear %x, %table : tensor<4x8x16xf32>, tensor<37x16xf32> -> tensor<4x8x37xf32>
  // expected-warning @+1 {{vocabulary of 37 classes padded to 40 for axis "tp" of size 4: the padded classes are masked out of the loss}}
  %l = rtx.cross_entropy %logits, %labels : tensor<4x8x37xf32>, tensor<4x8xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A classifier head with a bias: both get the zero rows.
// CHECK-LABEL: func.func @head_with_bias
// CHECK: rtx.concat {{.*}} : tensor<10x8xf32>, tensor<2x8xf32> -> tensor<12x8xf32>
// CHECK: rtx.concat {{.*}} : tensor<10xf32>, tensor<2xf32> -> tensor<12xf32>
// CHECK: rtx.linear {{.*}} -> tensor<4x12xf32>
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @head_with_bias(%h: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  %w = rtx.param "head.weight" normal(0.0, 0.02) : tensor<10x8xf32>
  %b = rtx.param "head.bias" zeros : tensor<10xf32>
  %logits = rtx.linear %h, %w, %b : tensor<4x8xf32>, tensor<10x8xf32>, tensor<10xf32> -> tensor<4x10xf32>
  // expected-warning @+1 {{vocabulary of 10 classes padded to 12 for axis "tp" of size 4}}
  %l = rtx.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A vocabulary tp divides, or a mesh without tp: nothing to pad.
// CHECK-LABEL: func.func @divisible
// CHECK-NOT: rtx.concat
// CHECK-NOT: rtx.masked_fill
// CHECK: return
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @divisible(%h: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  %w = rtx.param "head.weight" normal(0.0, 0.02) : tensor<10x8xf32>
  %logits = rtx.linear %h, %w : tensor<4x8xf32>, tensor<10x8xf32> -> tensor<4x10xf32>
  %l = rtx.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @no_tp
// CHECK-NOT: rtx.concat
// CHECK: return
rtx.mesh @mesh_dp4 ["dp"=4]

func.func @no_tp(%h: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
  %w = rtx.param "head.weight" normal(0.0, 0.02) : tensor<10x8xf32>
  %logits = rtx.linear %h, %w : tensor<4x8xf32>, tensor<10x8xf32> -> tensor<4x10xf32>
  %l = rtx.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
