// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// The vocab-parallel forms that rtx-partition writes for a vocabulary split
// over tp: rtx.embedding / rtx.embedding_grad with `vocab on`, and the
// cross-entropy pieces rtx.vocab_logit_stats, rtx.vocab_cross_entropy,
// rtx.vocab_cross_entropy_grad.

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @embedding_vocab_shard
// CHECK: rtx.embedding %{{.*}}, %{{.*}} vocab on @mesh_dp2_tp4 ["tp"] : tensor<11x7xf32>, tensor<3x5xi32> -> tensor<3x5x7xf32>
// CHECK: rtx.embedding_grad %{{.*}}, %{{.*}} vocab on @mesh_dp2_tp4 ["dp", "tp"] : tensor<3x5xi32>, tensor<3x5x7xf32> -> tensor<11x7xf32>
// CHECK: rtx.embedding %{{.*}}, %{{.*}} : tensor<11x7xf32>, tensor<3x5xi32> -> tensor<3x5x7xf32>
func.func @embedding_vocab_shard(%table: tensor<11x7xf32>, %ids: tensor<3x5xi32>) -> (tensor<3x5x7xf32>, tensor<11x7xf32>, tensor<3x5x7xf32>) {
  %x = rtx.embedding %table, %ids vocab on @mesh_dp2_tp4 ["tp"] : tensor<11x7xf32>, tensor<3x5xi32> -> tensor<3x5x7xf32>
  %d = rtx.embedding_grad %ids, %x vocab on @mesh_dp2_tp4 ["dp", "tp"] : tensor<3x5xi32>, tensor<3x5x7xf32> -> tensor<11x7xf32>
  %y = rtx.embedding %table, %ids : tensor<11x7xf32>, tensor<3x5xi32> -> tensor<3x5x7xf32>
  return %x, %d, %y : tensor<3x5x7xf32>, tensor<11x7xf32>, tensor<3x5x7xf32>
}

// -----

rtx.mesh @mesh_tp4 ["tp"=4]

// CHECK-LABEL: func.func @vocab_cross_entropy
// CHECK-SAME: (%[[L:[^:]*]]: tensor<3x5x11xf32>, %[[Y:[^:]*]]: tensor<3x5xi32>, %[[S:[^:]*]]: tensor<3x5xf32>, %[[G:[^:]*]]: tensor<f32>)
// CHECK: %[[MAX:.*]], %[[LABEL:.*]] = rtx.vocab_logit_stats %[[L]], %[[Y]] on @mesh_tp4 ["tp"] ignore_index -1 : tensor<3x5x11xf32>, tensor<3x5xi32> -> tensor<3x5xf32>, tensor<3x5xf32>
// CHECK: %[[LOSS:.*]] = rtx.vocab_cross_entropy %[[MAX]], %[[S]], %[[LABEL]], %[[Y]] ignore_index -1 : tensor<3x5xf32>, tensor<3x5xi32> -> tensor<f32>
// CHECK: %[[D:.*]] = rtx.vocab_cross_entropy_grad %[[L]], %[[Y]], %[[G]], %[[MAX]], %[[S]] on @mesh_tp4 ["tp"] ignore_index -1 : tensor<3x5x11xf32>, tensor<3x5xi32>, tensor<f32>, tensor<3x5xf32>
// CHECK: return %[[LOSS]], %[[D]]
func.func @vocab_cross_entropy(%logits: tensor<3x5x11xf32>, %labels: tensor<3x5xi32>, %sum: tensor<3x5xf32>, %dloss: tensor<f32>) -> (tensor<f32>, tensor<3x5x11xf32>) {
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"] ignore_index -1 : tensor<3x5x11xf32>, tensor<3x5xi32> -> tensor<3x5xf32>, tensor<3x5xf32>
  %loss = rtx.vocab_cross_entropy %max, %sum, %label, %labels ignore_index -1 : tensor<3x5xf32>, tensor<3x5xi32> -> tensor<f32>
  %d = rtx.vocab_cross_entropy_grad %logits, %labels, %dloss, %max, %sum on @mesh_tp4 ["tp"] ignore_index -1 : tensor<3x5x11xf32>, tensor<3x5xi32>, tensor<f32>, tensor<3x5xf32>
  return %loss, %d : tensor<f32>, tensor<3x5x11xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// CHECK-LABEL: func.func @vocab_cross_entropy_f64_no_ignore
// CHECK: rtx.vocab_logit_stats %{{.*}}, %{{.*}} on @mesh_tp2 ["tp"] : tensor<7x3xf64>, tensor<7xi64> -> tensor<7xf64>, tensor<7xf64>
// CHECK: rtx.vocab_cross_entropy %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<7xf64>, tensor<7xi64> -> tensor<f64>
func.func @vocab_cross_entropy_f64_no_ignore(%logits: tensor<7x3xf64>, %labels: tensor<7xi64>) -> tensor<f64> {
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp2 ["tp"] : tensor<7x3xf64>, tensor<7xi64> -> tensor<7xf64>, tensor<7xf64>
  %loss = rtx.vocab_cross_entropy %max, %max, %label, %labels : tensor<7xf64>, tensor<7xi64> -> tensor<f64>
  return %loss : tensor<f64>
}
