// RUN: rtx-opt %s -split-input-file -rtx-verify-distribution -verify-diagnostics

rtx.mesh @mesh_tp2 ["tp"=2]

// A partial sum into gelu: gelu(a) + gelu(b) != gelu(a + b).
func.func @partial_into_gelu(%x: tensor<4x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                             %w: tensor<5x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>}) -> tensor<4x5xf32> {
  %p = rtx.linear %x, %w {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []], partial = ["tp"]>} : tensor<4x3xf32>, tensor<5x3xf32> -> tensor<4x5xf32>
  // expected-error @+1 {{'rtx.gelu' op operand 0 holds partial sums over ["tp"] that must be reduced before this op}}
  %g = rtx.gelu %p {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<4x5xf32>
  return %g : tensor<4x5xf32>
}

// -----

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// A wrong group: the value is a partial sum over tp, the all-reduce runs over
// dp (it would add replicas).
func.func @wrong_group(%x: tensor<4x3xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>},
                       %w: tensor<5x3xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>}) -> tensor<4x5xf32> {
  %p = rtx.linear %x, %w {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], []], partial = ["tp"]>} : tensor<4x3xf32>, tensor<5x3xf32> -> tensor<4x5xf32>
  // expected-error @+1 {{'rtx.all_reduce' op reduces over "dp", but its operand holds no partial sums over it}}
  %r = rtx.all_reduce %p on @mesh_dp2_tp2 ["dp"] sum {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], []]>} : tensor<4x5xf32> -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// An all-reduce of a value that holds no partial sums counts it twice.
func.func @reduce_of_replicated(%x: tensor<4xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> tensor<4xf32> {
  // expected-error @+1 {{'rtx.all_reduce' op reduces over "tp", but its operand holds no partial sums over it}}
  %r = rtx.all_reduce %x on @mesh_tp2 ["tp"] sum {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// Inconsistent local shapes: the two operands of an addition split the same
// dimension differently (each rank would add unrelated blocks).
func.func @wrong_local_shape(%a: tensor<2x6xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>},
                             %b: tensor<2x6xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>}) -> tensor<2x6xf32> {
  // expected-error @+1 {{'rtx.add' op operand 1 splits dimension 0 over [] but operand 0 splits dimension 0 (the same loop) over ["tp"]}}
  %s = rtx.add %a, %b {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>} : tensor<2x6xf32>
  return %s : tensor<2x6xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A softmax over a split dimension normalises each half separately.
func.func @split_softmax(%a: tensor<4x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>}) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rtx.softmax' op operand 0 splits dimension 1 over ["tp"], which this op needs whole}}
  %s = rtx.softmax %a dim 1 {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A row-parallel layer that adds its bias before the reduction.
func.func @bias_in_partial(%x: tensor<4x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                           %w: tensor<5x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                           %b: tensor<5xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> tensor<4x5xf32> {
  // expected-error @+1 {{'rtx.linear' op adds its bias to partial sums over ["tp"]: the bias would be counted once per rank}}
  %p = rtx.linear %x, %w, %b {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []], partial = ["tp"]>} : tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %r = rtx.all_reduce %p on @mesh_tp2 ["tp"] sum {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<4x5xf32> -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A gather over an axis that does not split the gathered dimension.
func.func @wrong_gather(%a: tensor<4x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>}) -> tensor<8x3xf32> {
  // expected-error @+1 {{'rtx.all_gather' op gathers dimension 0 over ["tp"], but its operand splits it over []}}
  %g = rtx.all_gather %a on @mesh_tp2 ["tp"] dim 0 {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<4x3xf32> -> tensor<8x3xf32>
  return %g : tensor<8x3xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A vocabulary shard looked up as if it were the whole table: rank 1 would
// return rows 0..10 for ids 11..21.
func.func @embedding_shard_without_offset(%t: tensor<11x4xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>},
                                          %ids: tensor<3xi32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> tensor<3x4xf32> {
  // expected-error @+1 {{'rtx.embedding' op operand 0 splits the vocabulary (dimension 0) over ["tp"], but the op offsets ids by the rank over []}}
  %x = rtx.embedding %t, %ids {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []], partial = ["tp"]>} : tensor<11x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  %r = rtx.all_reduce %x on @mesh_tp2 ["tp"] sum {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<3x4xf32> -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// -----

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// A table gradient offset by the wrong axis: it would scatter rows of the dp
// rank's range into the tp shard.
func.func @embedding_grad_wrong_axis(%ids: tensor<3xi32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[]]>},
                                     %dy: tensor<3x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], []]>}) -> tensor<11x4xf32> {
  // expected-error @+1 {{'rtx.embedding_grad' op result 0 splits the vocabulary (dimension 0) over ["tp"], but the op offsets ids by the rank over ["dp"]}}
  %d = rtx.embedding_grad %ids, %dy vocab on @mesh_dp2_tp2 ["dp"] {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>} : tensor<3xi32>, tensor<3x4xf32> -> tensor<11x4xf32>
  return %d : tensor<11x4xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// Whole logits read as a shard: each rank would count every class.
func.func @logit_stats_of_whole_logits(%l: tensor<3x22xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>},
                                       %y: tensor<3xi32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> tensor<3xf32> {
  // expected-error @+1 {{'rtx.vocab_logit_stats' op operand 0 splits the vocabulary (dimension 1) over [], but the op offsets labels by the rank over ["tp"]}}
  %max, %label = rtx.vocab_logit_stats %l, %y on @mesh_tp2 ["tp"] {rtx.sharding = [#rtx.sharding<@mesh_tp2, [[]], partial = ["tp"]>, #rtx.sharding<@mesh_tp2, [[]], partial = ["tp"]>]} : tensor<3x22xf32>, tensor<3xi32> -> tensor<3xf32>, tensor<3xf32>
  %m = rtx.all_reduce %max on @mesh_tp2 ["tp"] max {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>} : tensor<3xf32> -> tensor<3xf32>
  return %m : tensor<3xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]

// A plain cross-entropy on a vocabulary shard: the softmax would normalise
// over half the classes.
func.func @cross_entropy_of_vocab_shard(%l: tensor<3x11xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>},
                                        %y: tensor<3xi32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[]]>}) -> tensor<f32> {
  // expected-error @+1 {{'rtx.cross_entropy' op operand 0 splits dimension 1 over ["tp"], which this op needs whole}}
  %loss = rtx.cross_entropy %l, %y {rtx.sharding = #rtx.sharding<@mesh_tp2, []>} : tensor<3x11xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
