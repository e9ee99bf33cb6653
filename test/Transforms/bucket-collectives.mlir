// RUN: rtx-opt %s -split-input-file -rtx-bucket-collectives | FileCheck %s
// RUN: rtx-opt %s -split-input-file '-rtx-bucket-collectives=bucket-bytes=64' | FileCheck %s --check-prefix=SMALL

// Gradients all-reduced one by one, each used right away by its update (as
// rtx-optimizer writes them): all inputs exist before the first update, so
// the three form one bucket, placed after the last input's definition.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @updates_right_after_each_reduce
func.func @updates_right_after_each_reduce(%a: tensor<4x2xf32>, %b: tensor<3xf32>, %c: tensor<f32>) -> (tensor<4x2xf32>, tensor<3xf32>, tensor<f32>) {
  // CHECK: %[[A:.*]] = rtx.reshape %{{.*}} : tensor<4x2xf32> -> tensor<8xf32>
  // CHECK: %[[B:.*]] = rtx.reshape %{{.*}} : tensor<3xf32> -> tensor<3xf32>
  // CHECK: %[[C:.*]] = rtx.reshape %{{.*}} : tensor<f32> -> tensor<1xf32>
  // CHECK: %[[J:.*]] = rtx.concat %[[A]], %[[B]], %[[C]] dim 0
  // CHECK: %[[R:.*]] = rtx.all_reduce %[[J]] on @mesh_dp2 ["dp"] sum : tensor<12xf32> -> tensor<12xf32>
  // CHECK: rtx.split %[[R]] dim 0 : tensor<12xf32> -> tensor<8xf32>, tensor<3xf32>, tensor<1xf32>
  // CHECK-NOT: rtx.all_reduce
  %ga = rtx.add %a, %a : tensor<4x2xf32>
  %gb = rtx.add %b, %b : tensor<3xf32>
  %gc = rtx.add %c, %c : tensor<f32>
  %ra = rtx.all_reduce %ga on @mesh_dp2 ["dp"] sum : tensor<4x2xf32> -> tensor<4x2xf32>
  %ua = rtx.neg %ra : tensor<4x2xf32>
  %rb = rtx.all_reduce %gb on @mesh_dp2 ["dp"] sum : tensor<3xf32> -> tensor<3xf32>
  %ub = rtx.neg %rb : tensor<3xf32>
  %rc = rtx.all_reduce %gc on @mesh_dp2 ["dp"] sum : tensor<f32> -> tensor<f32>
  %uc = rtx.neg %rc : tensor<f32>
  return %ua, %ub, %uc : tensor<4x2xf32>, tensor<3xf32>, tensor<f32>
}

// SMALL-LABEL: func.func @updates_right_after_each_reduce
// With 64-byte buckets the 32-byte and 12-byte gradients share one, and the
// scalar (4 bytes) would still fit: 48 bytes.
// SMALL: rtx.all_reduce %{{.*}} : tensor<12xf32> -> tensor<12xf32>
// SMALL-NOT: rtx.all_reduce

// -----

// An all-reduce whose result feeds the next one's input (tensor
// parallelism: activations) cannot share its bucket; neither can
// all-reduces over other axes or of another reduction.
rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]
// CHECK-LABEL: func.func @dependent_or_different
// SMALL-LABEL: func.func @dependent_or_different
func.func @dependent_or_different(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: rtx.all_reduce %{{.*}} ["tp"] sum : tensor<4xf32>
  // CHECK: rtx.all_reduce %{{.*}} ["tp"] sum : tensor<4xf32>
  // CHECK: rtx.all_reduce %{{.*}} ["dp"] sum : tensor<4xf32>
  // CHECK: rtx.all_reduce %{{.*}} ["dp"] max : tensor<4xf32>
  // CHECK-NOT: rtx.concat
  %r1 = rtx.all_reduce %a on @mesh_dp2_tp2 ["tp"] sum : tensor<4xf32> -> tensor<4xf32>
  %h = rtx.exp %r1 : tensor<4xf32>
  %r2 = rtx.all_reduce %h on @mesh_dp2_tp2 ["tp"] sum : tensor<4xf32> -> tensor<4xf32>
  %r3 = rtx.all_reduce %r2 on @mesh_dp2_tp2 ["dp"] sum : tensor<4xf32> -> tensor<4xf32>
  %r4 = rtx.all_reduce %a on @mesh_dp2_tp2 ["dp"] max : tensor<4xf32> -> tensor<4xf32>
  return %r2, %r3, %r4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// With 64-byte buckets, two 48-byte gradients need two all-reduces: each
// stays alone, unchanged.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @bucket_limit
// CHECK: rtx.all_reduce %{{.*}} : tensor<24xf32> -> tensor<24xf32>
// SMALL-LABEL: func.func @bucket_limit
func.func @bucket_limit(%a: tensor<12xf32>, %b: tensor<12xf32>) -> (tensor<12xf32>, tensor<12xf32>) {
  // SMALL: rtx.all_reduce %arg0
  // SMALL: rtx.all_reduce %arg1
  // SMALL-NOT: rtx.concat
  %ra = rtx.all_reduce %a on @mesh_dp2 ["dp"] sum : tensor<12xf32> -> tensor<12xf32>
  %rb = rtx.all_reduce %b on @mesh_dp2 ["dp"] sum : tensor<12xf32> -> tensor<12xf32>
  return %ra, %rb : tensor<12xf32>, tensor<12xf32>
}
