// A ring: every rank sends its rank-dependent shard to the next one and
// receives from the previous, both through rtx.permute and through async
// send/recv, which must agree.
//
// RUN: rtx-run %s --ranks 4 --inputs %S/Inputs | FileCheck %s
// The input is arange(4); after one ring step rank r holds r-1 (mod 4), so
// the gathered result is [3, 0, 1, 2] (sum 6, l2 sqrt(14)) for both results.
// CHECK: result 0: tensor<4xf32> sum=6.000000e+00 l2=3.741657e+00
// CHECK: result 1: tensor<4xf32> sum=6.000000e+00 l2=3.741657e+00

rtx.mesh @mesh_pp4 ["pp"=4]
func.func @main(%x: tensor<1xf32> {rtx.sharding = #rtx.sharding<@mesh_pp4, [["pp"]]>})
    -> (tensor<1xf32> {rtx.sharding = #rtx.sharding<@mesh_pp4, [["pp"]]>},
        tensor<1xf32> {rtx.sharding = #rtx.sharding<@mesh_pp4, [["pp"]]>}) {
  %a = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0]
      : tensor<1xf32> -> tensor<1xf32>
  return %a, %a : tensor<1xf32>, tensor<1xf32>
}
