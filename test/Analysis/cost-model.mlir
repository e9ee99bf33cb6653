// RUN: rtx-opt %s -rtx-test-cost-model -verify-diagnostics
// RUN: rtx-opt %s -rtx-propagate-sharding -rtx-partition -rtx-test-cost-model 2>&1 >/dev/null | FileCheck %s --check-prefix=LOCAL

// The program cost model sums the ops' own costs (CostOpInterface). On the
// global Megatron MLP (x [8, 13], fc1 13 -> 6, gelu, fc2 6 -> 13): the two
// linears cost 2 * 8 * 6 * 13 = 1248 FLOPs each and the gelu 8 per element.
// Partitioned on dp=2 x tp=2 one rank does a quarter of the work, and its
// one collective is the row-parallel layer's all-reduce of its [4, 13] f32
// partial sums (208 bytes) over tp. Bytes count every operand and result of
// each op: the global program's parameters (2 x 312), linears (2 x 920) and
// gelu (384).
// LOCAL: remark: flops: 720; bytes: 1232; rtx.gelu: 96; rtx.linear: 624; collectives over tp: 1 moving 208 bytes

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// expected-remark @+1 {{flops: 2880; bytes: 2848; rtx.gelu: 384; rtx.linear: 2496}}
func.func @megatron_mlp(%x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>}) -> tensor<8x13xf32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>} : tensor<6x13xf32>
  %h = rtx.linear %x, %w1 : tensor<8x13xf32>, tensor<6x13xf32> -> tensor<8x6xf32>
  %a = rtx.gelu %h : tensor<8x6xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.2) {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>} : tensor<13x6xf32>
  %y = rtx.linear %a, %w2 : tensor<8x6xf32>, tensor<13x6xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}
