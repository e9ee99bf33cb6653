// RUN: rtx-opt %s -split-input-file -rtx-partition -verify-diagnostics

// A global program has no collectives yet: they are what rtx-partition adds.
rtx.mesh @mesh_tp2 ["tp"=2]
func.func @collective_in_global_program(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{rtx-partition does not support 'rtx.all_reduce' in a global program}}
  %y = rtx.all_reduce %x on @mesh_tp2 ["tp"] sum : tensor<8x13xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}

// -----

// Shards are equal blocks: a split the axis does not divide is refused,
// naming the tensor, the dimension and the axes.
rtx.mesh @mesh_tp2 ["tp"=2]
func.func @parameter_split_does_not_divide(%x: tensor<8x13xf32>) -> tensor<8x5xf32> {
  // expected-error @+1 {{rtx-partition: parameter 'w' splits dimension 0 of size 5 over ["tp"] (2 ranks), which does not divide it}}
  %w = rtx.param "w" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>} : tensor<5x13xf32>
  %y = rtx.linear %x, %w : tensor<8x13xf32>, tensor<5x13xf32> -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}

// -----

rtx.mesh @mesh_dp2_tp3 ["dp"=2, "tp"=3]
// expected-error @+1 {{rtx-partition: argument 0 splits dimension 1 of size 8 over ["dp", "tp"] (6 ranks), which does not divide it}}
func.func @argument_split_does_not_divide(%x: tensor<4x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp3, [[], ["dp", "tp"]]>}) -> tensor<4x8xf32> {
  %y = rtx.neg %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_tp2 ["tp"=2]
func.func @result_split_does_not_divide(%x: tensor<4x7xf32>) -> tensor<4x7xf32> {
  // expected-error @+1 {{rtx-partition: the result of 'rtx.neg' splits dimension 1 of size 7 over ["tp"] (2 ranks)}}
  %y = rtx.neg %x {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<4x7xf32>
  return %y : tensor<4x7xf32>
}
