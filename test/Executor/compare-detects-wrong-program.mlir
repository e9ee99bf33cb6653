// A wrongly partitioned MLP (the all-reduce over tp is missing, so each rank
// returns only its partial sum): rtx-run notices that the ranks disagree on
// a value their sharding says is replicated, and --compare exits 1. With the
// result declared as a partial sum over tp (so reassembly adds the ranks'
// values) the program is right and compares equal.
//
// RUN: not rtx-run --compare %S/Inputs/mlp.mlir %s --ranks 2 --random 2>&1 | FileCheck %s
// CHECK: rtx-run: error: result 0: rank 1 and rank 0 hold different values for the same block, but its sharding says they are replicas
// RUN: sed 's/-> tensor<8x13xf32> {$/-> (tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []], partial = ["tp"]>}) {/' %s > %t.mlir
// RUN: rtx-run --compare %S/Inputs/mlp.mlir %t.mlir --ranks 2 --random | FileCheck %s --check-prefix=PARTIAL
// PARTIAL: result 0: tensor<8x13xf32> {{.*}} PASS

rtx.mesh @mesh_tp2 ["tp"=2]

func.func @mlp(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) seed 1
      {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"], []]>} : tensor<3x13xf32>
  %b1 = rtx.param "fc1.bias" uniform(-0.1, 0.1) seed 2
      {rtx.sharding = #rtx.sharding<@mesh_tp2, [["tp"]]>} : tensor<3xf32>
  %h = rtx.linear %x, %w1, %b1 : tensor<8x13xf32>, tensor<3x13xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %a = rtx.gelu %h : tensor<8x3xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) seed 3
      {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], ["tp"]]>} : tensor<13x3xf32>
  %p = rtx.linear %a, %w2 : tensor<8x3xf32>, tensor<13x3xf32> -> tensor<8x13xf32>
  return %p : tensor<8x13xf32>
}
