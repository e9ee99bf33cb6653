// The MLP of Inputs/mlp.mlir, partitioned by hand for dp=2 x tp=2 the way
// Megatron does it: batch split over dp, fc1 column-parallel, fc2
// row-parallel, one all-reduce over tp. rtx-run --compare must find it equal
// to the single-device program on the same inputs and parameters.
//
// RUN: rtx-run --compare %S/Inputs/mlp.mlir %s --ranks 4 --random | FileCheck %s
// CHECK: result 0: tensor<8x13xf32> max_abs={{.*}} rel_norm={{.*}} tolerance=1.0e-05 PASS

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

func.func @mlp(%x: tensor<4x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>})
    -> (tensor<4x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>}) {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) seed 1
      {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>} : tensor<3x13xf32>
  %b1 = rtx.param "fc1.bias" uniform(-0.1, 0.1) seed 2
      {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"]]>} : tensor<3xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<4x13xf32>, tensor<3x13xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %a = rtx.gelu %h : tensor<4x3xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) seed 3
      {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>} : tensor<13x3xf32>
  %p = rtx.linear %a, %w2 : tensor<4x3xf32>, tensor<13x3xf32> -> tensor<4x13xf32>
  %y = rtx.all_reduce %p on @mesh_dp2_tp2 ["tp"] sum : tensor<4x13xf32> -> tensor<4x13xf32>
  return %y : tensor<4x13xf32>
}
