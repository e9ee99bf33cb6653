// RUN: rtx-opt %s -split-input-file -rtx-propagate-sharding -rtx-partition | FileCheck %s

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// Megatron's MLP: local shapes, no communication until the row-parallel
// layer's partial sums, then exactly one all-reduce over tp.
// CHECK-LABEL: module attributes {rtx.phase = "local"}
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x13xf32>
// CHECK: %[[W1:.*]] = rtx.param "fc1.weight" {{.*}} : tensor<3x13xf32>
// CHECK: %[[H:.*]] = rtx.linear %[[X]], %[[W1]] {{.*}} -> tensor<4x3xf32>
// CHECK: %[[A:.*]] = rtx.gelu %[[H]]
// CHECK: %[[W2:.*]] = rtx.param "fc2.weight" {{.*}} : tensor<13x3xf32>
// CHECK: %[[P:.*]] = rtx.linear %[[A]], %[[W2]] {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, {{\[\[}}"dp"], []], partial = ["tp"]>}
// CHECK: %[[Y:.*]] = rtx.all_reduce %[[P]] on @mesh_dp2_tp2 ["tp"] sum
// CHECK-NOT: rtx.all_
// CHECK: return %[[Y]] : tensor<4x13xf32>
func.func @megatron_mlp(%x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>}) -> tensor<8x13xf32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>} : tensor<6x13xf32>
  %h = rtx.linear %x, %w1 : tensor<8x13xf32>, tensor<6x13xf32> -> tensor<8x6xf32>
  %a = rtx.gelu %h : tensor<8x6xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>} : tensor<13x6xf32>
  %y = rtx.linear %a, %w2 : tensor<8x6xf32>, tensor<13x6xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// Reshards: a value split over tp that must be whole is all-gathered; a
// contraction over a split dimension leaves partial sums, which a consumer
// that wants the rows split over the same axis gets by a reduce-scatter.
// CHECK-LABEL: func.func @reshards
// CHECK: rtx.all_gather %{{.*}} on @mesh_tp2 ["tp"] dim 1 {{.*}} : tensor<4x3xf32> -> tensor<4x6xf32>
// CHECK: rtx.softmax
// CHECK: %[[P:.*]] = rtx.matmul {{.*}}partial = ["tp"]{{.*}} : tensor<4x3xf32>, tensor<3x4xf32> -> tensor<4x4xf32>
// CHECK: rtx.reduce_scatter %[[P]] on @mesh_tp2 ["tp"] sum dim 0 {{.*}} : tensor<4x4xf32> -> tensor<2x4xf32>
func.func @reshards(%a: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                    %w: tensor<6x4xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>})
    -> (tensor<4x6xf32>, tensor<4x4xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>}) {
  %s = rtx.softmax %a dim 1 : tensor<4x6xf32>
  %m = rtx.matmul %a, %w {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
  return %s, %m : tensor<4x6xf32>, tensor<4x4xf32>
}

// -----

rtx.mesh @mesh_dp2 ["dp"=2]

// A mean over a split dimension is rescaled so the ranks' partial sums add
// up to the global mean.
// CHECK-LABEL: func.func @split_mean
// CHECK: %[[M:.*]] = rtx.reduce mean %{{.*}} dims [0] {{.*}} : tensor<4xf32> -> tensor<f32>
// CHECK: %[[HALF:.*]] = rtx.constant {{.*}}dense<5.000000e-01> : tensor<f32>
// CHECK: %[[S:.*]] = rtx.mul %[[M]], %[[HALF]] {rtx.sharding = #rtx.sharding<@mesh_dp2, [], partial = ["dp"]>}
// CHECK: rtx.all_reduce %[[S]] on @mesh_dp2 ["dp"] sum
func.func @split_mean(%x: tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2, [["dp"]]>}) -> tensor<f32> {
  %m = rtx.reduce mean %x dims [0] : tensor<8xf32> -> tensor<f32>
  return %m : tensor<f32>
}

// -----

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// Megatron's vocab-parallel language-model head (a tied table [V, D] split
// along V over tp; batch over dp): each rank looks up its own rows (partial
// sums, all-reduced), its logits cover its 11 of 22 classes, and the loss
// takes three all-reduces of per-token statistics (max, label logit, sum of
// exponentials) instead of gathering the logits. The gradient is computed on
// the shard from the same statistics, and the table's gradient is the
// shard's rows. The residual add of a whole position table after the
// embedding reduces the partial sums first (adding it to each rank's partial
// sum would count it twice).
// CHECK-LABEL: func.func @vocab_parallel_lm
// CHECK-SAME: (%[[TABLE:arg0]]: tensor<11x8xf32>
// CHECK-SAME: %[[IDS:arg1]]: tensor<2x5xi32>
// CHECK-SAME: %[[LABELS:arg2]]: tensor<2x5xi32>
// CHECK-SAME: %[[POS:arg3]]: tensor<2x5x8xf32>
// CHECK: %[[E:.*]] = rtx.embedding %[[TABLE]], %[[IDS]] vocab on @mesh_dp2_tp2 ["tp"] {{.*}}partial = ["tp"]{{.*}} : tensor<11x8xf32>, tensor<2x5xi32> -> tensor<2x5x8xf32>
// CHECK: %[[R:.*]] = rtx.all_reduce %[[E]] on @mesh_dp2_tp2 ["tp"] sum
// CHECK: %[[H:.*]] = rtx.add %[[R]], %[[POS]]
// CHECK: %[[L:.*]] = rtx.linear %[[H]], %[[TABLE]] {{.*}} -> tensor<2x5x11xf32>
// CHECK-NOT: rtx.all_gather
// CHECK: %[[MAX:.*]], %[[LABEL:.*]] = rtx.vocab_logit_stats %[[L]], %[[LABELS]] on @mesh_dp2_tp2 ["tp"] ignore_index -1 {{.*}} -> tensor<2x5xf32>, tensor<2x5xf32>
// CHECK: %[[GMAX:.*]] = rtx.all_reduce %[[MAX]] on @mesh_dp2_tp2 ["tp"] max
// CHECK: %[[GLABEL:.*]] = rtx.all_reduce %[[LABEL]] on @mesh_dp2_tp2 ["tp"] sum
// CHECK: %[[B:.*]] = rtx.broadcast %[[GMAX]] dims [0, 1] {{.*}} -> tensor<2x5x11xf32>
// CHECK: %[[S:.*]] = rtx.sub %[[L]], %[[B]]
// CHECK: %[[X:.*]] = rtx.exp %[[S]]
// CHECK: %[[PSUM:.*]] = rtx.reduce sum %[[X]] dims [2] {{.*}}partial = ["tp"]{{.*}} -> tensor<2x5xf32>
// CHECK: %[[SUM:.*]] = rtx.all_reduce %[[PSUM]] on @mesh_dp2_tp2 ["tp"] sum
// CHECK: %[[LOSS:.*]] = rtx.vocab_cross_entropy %[[GMAX]], %[[SUM]], %[[GLABEL]], %[[LABELS]] ignore_index -1 {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [], partial = ["dp"]>}
// The mean over the batch split over dp: rescaled by 1/2.
// CHECK: %[[HALF:.*]] = rtx.constant {{.*}}dense<5.000000e-01>
// CHECK: %[[SCALED:.*]] = rtx.mul %[[LOSS]], %[[HALF]]
// CHECK: %[[D:.*]] = rtx.vocab_cross_entropy_grad %[[L]], %[[LABELS]], %{{.*}}, %[[GMAX]], %[[SUM]] on @mesh_dp2_tp2 ["tp"] ignore_index -1 {{.*}} : tensor<2x5x11xf32>
// CHECK-NOT: rtx.vocab_logit_stats
// CHECK: %[[DT:.*]] = rtx.embedding_grad %[[IDS]], %{{.*}} vocab on @mesh_dp2_tp2 ["tp"] {{.*}}partial = ["dp"]{{.*}} -> tensor<11x8xf32>
// CHECK: rtx.all_reduce %[[DT]] on @mesh_dp2_tp2 ["dp"] sum
func.func @vocab_parallel_lm(%table: tensor<22x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>},
                             %ids: tensor<4x5xi32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>},
                             %labels: tensor<4x5xi32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>},
                             %pos: tensor<4x5x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], [], []]>},
                             %dloss: tensor<f32>, %dh: tensor<4x5x8xf32>)
    -> (tensor<f32>, tensor<22x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>}, tensor<4x5x22xf32>) {
  %e = rtx.embedding %table, %ids : tensor<22x8xf32>, tensor<4x5xi32> -> tensor<4x5x8xf32>
  %h = rtx.add %e, %pos : tensor<4x5x8xf32>
  %logits = rtx.linear %h, %table : tensor<4x5x8xf32>, tensor<22x8xf32> -> tensor<4x5x22xf32>
  %loss = rtx.cross_entropy %logits, %labels ignore_index -1 : tensor<4x5x22xf32>, tensor<4x5xi32> -> tensor<f32>
  %dlogits = rtx.cross_entropy_grad %logits, %labels, %dloss ignore_index -1 : tensor<4x5x22xf32>, tensor<4x5xi32>, tensor<f32>
  %dtable = rtx.embedding_grad %ids, %dh : tensor<4x5xi32>, tensor<4x5x8xf32> -> tensor<22x8xf32>
  return %loss, %dtable, %dlogits : tensor<f32>, tensor<22x8xf32>, tensor<4x5x22xf32>
}
