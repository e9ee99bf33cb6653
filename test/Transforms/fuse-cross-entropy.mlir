// RUN: rtx-opt %s -split-input-file -rtx-fuse-cross-entropy | FileCheck %s

// The loss and its gradient (seeded by rtx-autodiff's constant 1.0, defined
// between them) become one op where the loss was.
// CHECK-LABEL: func.func @loss_and_grad
func.func @loss_and_grad(%logits: tensor<6x11xf32>, %labels: tensor<6xi32>)
    -> (tensor<f32>, tensor<6x11xf32>) {
  // CHECK: %[[ONE:.*]] = rtx.constant dense<1.000000e+00> : tensor<f32>
  // CHECK-NEXT: %[[L:.*]], %[[D:.*]] = rtx.cross_entropy_with_grad %arg0, %arg1, %[[ONE]] ignore_index -1 : tensor<6x11xf32>, tensor<6xi32>, tensor<f32> -> tensor<f32>
  // CHECK-NOT: rtx.cross_entropy_grad
  // CHECK: return %[[L]], %[[D]]
  %loss = rtx.cross_entropy %logits, %labels ignore_index -1 : tensor<6x11xf32>, tensor<6xi32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %one ignore_index -1 : tensor<6x11xf32>, tensor<6xi32>, tensor<f32>
  return %loss, %d : tensor<f32>, tensor<6x11xf32>
}

// -----

// A computed seed (a scaled loss) that the loss itself feeds: the fused op
// goes where the gradient was, the loss being used only after it... here
// it is used before (by the seed), so nothing changes.
// CHECK-LABEL: func.func @seed_from_loss
func.func @seed_from_loss(%logits: tensor<6x11xf32>, %labels: tensor<6xi32>)
    -> tensor<6x11xf32> {
  // CHECK: rtx.cross_entropy %arg0
  // CHECK: rtx.cross_entropy_grad
  // CHECK-NOT: rtx.cross_entropy_with_grad
  %loss = rtx.cross_entropy %logits, %labels : tensor<6x11xf32>, tensor<6xi32> -> tensor<f32>
  %seed = rtx.exp %loss : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %seed : tensor<6x11xf32>, tensor<6xi32>, tensor<f32>
  return %d : tensor<6x11xf32>
}

// -----

// A seed computed after the loss but not from it: fused at the gradient.
// CHECK-LABEL: func.func @seed_after_loss
func.func @seed_after_loss(%logits: tensor<6x11xf32>, %labels: tensor<6xi32>,
                           %s: tensor<f32>) -> (tensor<f32>, tensor<6x11xf32>) {
  // CHECK: %[[SEED:.*]] = rtx.exp %arg2
  // CHECK-NEXT: rtx.cross_entropy_with_grad %arg0, %arg1, %[[SEED]]
  %loss = rtx.cross_entropy %logits, %labels : tensor<6x11xf32>, tensor<6xi32> -> tensor<f32>
  %seed = rtx.exp %s : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %seed : tensor<6x11xf32>, tensor<6xi32>, tensor<f32>
  return %loss, %d : tensor<f32>, tensor<6x11xf32>
}

// -----

// Different ignore_index, or other labels: not the same loss.
// CHECK-LABEL: func.func @mismatch
func.func @mismatch(%logits: tensor<6x11xf32>, %labels: tensor<6xi32>,
                    %other: tensor<6xi32>) -> (tensor<f32>, tensor<6x11xf32>, tensor<6x11xf32>) {
  // CHECK-NOT: rtx.cross_entropy_with_grad
  %loss = rtx.cross_entropy %logits, %labels : tensor<6x11xf32>, tensor<6xi32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %one ignore_index -1 : tensor<6x11xf32>, tensor<6xi32>, tensor<f32>
  %e = rtx.cross_entropy_grad %logits, %other, %one : tensor<6x11xf32>, tensor<6xi32>, tensor<f32>
  return %loss, %d, %e : tensor<f32>, tensor<6x11xf32>, tensor<6x11xf32>
}

// -----

// A data-parallel per-rank program: the local loss and gradient fuse; the
// loss's all-reduce stays.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @partitioned
func.func @partitioned(%logits: tensor<3x11xf32>, %labels: tensor<3xi32>)
    -> (tensor<f32>, tensor<3x11xf32>) {
  // CHECK: %[[L:.*]], %{{.*}} = rtx.cross_entropy_with_grad %arg0, %arg1
  // CHECK: rtx.all_reduce %[[L]] on @mesh_dp2 ["dp"] mean
  %loss = rtx.cross_entropy %logits, %labels : tensor<3x11xf32>, tensor<3xi32> -> tensor<f32>
  %mean = rtx.all_reduce %loss on @mesh_dp2 ["dp"] mean : tensor<f32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %d = rtx.cross_entropy_grad %logits, %labels, %one : tensor<3x11xf32>, tensor<3xi32>, tensor<f32>
  return %mean, %d : tensor<f32>, tensor<3x11xf32>
}
