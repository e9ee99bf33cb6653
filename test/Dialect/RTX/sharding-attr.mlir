// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// The #rtx.sharding attribute, attached as `rtx.sharding` to ops (one per
// result), function arguments and function results.

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @sharding_on_op
// CHECK: rtx.matmul %{{.*}}, %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], ["tp"]]>} : tensor<8x13xf32>, tensor<13x64xf32> -> tensor<8x64xf32>
func.func @sharding_on_op(%a: tensor<8x13xf32>, %b: tensor<13x64xf32>) -> tensor<8x64xf32> {
  %c = rtx.matmul %a, %b {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], ["tp"]]>} : tensor<8x13xf32>, tensor<13x64xf32> -> tensor<8x64xf32>
  return %c : tensor<8x64xf32>
}

// -----

// A contraction over a split K leaves partial sums.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @sharding_partial
// CHECK: rtx.matmul %{{.*}}, %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], []], partial = ["tp"]>}
// CHECK: rtx.add %{{.*}}, %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}[], []], partial = ["dp", "tp"]>} : tensor<8x65xf32>
func.func @sharding_partial(%a: tensor<8x12xf32>, %b: tensor<12x65xf32>) -> tensor<8x65xf32> {
  %c = rtx.matmul %a, %b {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []], partial = ["tp"]>} : tensor<8x12xf32>, tensor<12x65xf32> -> tensor<8x65xf32>
  %d = rtx.add %c, %c {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[], []], partial = ["dp", "tp"]>} : tensor<8x65xf32>
  return %d : tensor<8x65xf32>
}

// -----

// Several axes on one dimension (major to minor, order kept), a fully
// replicated scalar, and an empty partial list, which is not printed.
rtx.mesh @mesh_dp2_sp2_tp2 ["dp"=2, "sp"=2, "tp"=2]

// CHECK-LABEL: func.func @sharding_axis_lists
// CHECK: rtx.relu %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, {{\[}}["tp", "dp"], ["sp"]]>} : tensor<8x13xf32>
// CHECK: rtx.reshape %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, []>} : tensor<1xf32> -> tensor<f32>
// CHECK: rtx.neg %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, {{\[}}[], []]>} : tensor<8x13xf32>
func.func @sharding_axis_lists(%x: tensor<8x13xf32>, %s: tensor<1xf32>) -> (tensor<8x13xf32>, tensor<f32>, tensor<8x13xf32>) {
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, [["tp", "dp"], ["sp"]]>} : tensor<8x13xf32>
  %1 = rtx.reshape %s {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, []>} : tensor<1xf32> -> tensor<f32>
  %2 = rtx.neg %x {rtx.sharding = #rtx.sharding<@mesh_dp2_sp2_tp2, [[], []], partial = []>} : tensor<8x13xf32>
  return %0, %1, %2 : tensor<8x13xf32>, tensor<f32>, tensor<8x13xf32>
}

// -----

// One sharding per result of a multi-result op; an array is also accepted for
// a single result.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @sharding_multi_result
// CHECK: %{{.*}}:3 = rtx.split %{{.*}} dim 2 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], [], ["tp"]]>, #rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], [], []]>, #rtx.sharding<@mesh_dp2_tp4, {{\[}}[], ["tp"], []]>]} : tensor<2x12x24xf32> -> tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>
// CHECK: rtx.gelu %{{.*}} {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], [], ["tp"]]>]} : tensor<2x12x8xf32>
func.func @sharding_multi_result(%x: tensor<2x12x24xf32>) -> tensor<2x12x8xf32> {
  %q, %k, %v = rtx.split %x dim 2 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], [], ["tp"]]>, #rtx.sharding<@mesh_dp2_tp4, [["dp"], [], []]>, #rtx.sharding<@mesh_dp2_tp4, [[], ["tp"], []]>]} : tensor<2x12x24xf32> -> tensor<2x12x8xf32>, tensor<2x12x8xf32>, tensor<2x12x8xf32>
  %g = rtx.gelu %q {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], [], ["tp"]]>]} : tensor<2x12x8xf32>
  return %g : tensor<2x12x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @sharding_func_args_results
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], []]>},
// CHECK-SAME: %[[W:[^:]*]]: tensor<65x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["tp"], []]>},
// CHECK-SAME: %[[I:[^:]*]]: i32)
// CHECK-SAME: -> (tensor<8x65xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["dp"], ["tp"]]>}, tensor<f32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [], partial = ["dp"]>})
func.func @sharding_func_args_results(
    %x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>},
    %w: tensor<65x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["tp"], []]>},
    %i: i32)
    -> (tensor<8x65xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], ["tp"]]>},
        tensor<f32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [], partial = ["dp"]>}) {
  %y = rtx.linear %x, %w : tensor<8x13xf32>, tensor<65x13xf32> -> tensor<8x65xf32>
  %l = rtx.constant dense<0.0> : tensor<f32>
  return %y, %l : tensor<8x65xf32>, tensor<f32>
}

// -----

// Shardings on collectives, values entering the model and a mesh declared
// after its use; an axis of size 1 is fine.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @sharding_on_other_ops
// CHECK: rtx.param "w" zeros {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}["tp"], []]>} : tensor<64x13xf32>
// CHECK: rtx.input "x" {rtx.sharding = #rtx.sharding<@mesh_pp1_dp2, {{\[}}["pp", "dp"]]>} : tensor<8xi32>
// CHECK: rtx.all_gather %{{.*}} on @mesh_dp2_tp4 ["tp"] dim 0 {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, {{\[}}[], []]>} : tensor<16x13xf32> -> tensor<64x13xf32>
// CHECK: rtx.mesh @mesh_pp1_dp2 ["pp"=1, "dp"=2]
func.func @sharding_on_other_ops(%x: tensor<16x13xf32>) -> (tensor<64x13xf32>, tensor<8xi32>, tensor<64x13xf32>) {
  %w = rtx.param "w" zeros {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["tp"], []]>} : tensor<64x13xf32>
  %i = rtx.input "x" {rtx.sharding = #rtx.sharding<@mesh_pp1_dp2, [["pp", "dp"]]>} : tensor<8xi32>
  %g = rtx.all_gather %x on @mesh_dp2_tp4 ["tp"] dim 0 {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[], []]>} : tensor<16x13xf32> -> tensor<64x13xf32>
  return %w, %i, %g : tensor<64x13xf32>, tensor<8xi32>, tensor<64x13xf32>
}
rtx.mesh @mesh_pp1_dp2 ["pp"=1, "dp"=2]

// -----

// The attribute alone, as the value of an unrelated (non-rtx) attribute, is
// not checked against a mesh.
// CHECK-LABEL: func.func @sharding_as_plain_attribute
// CHECK-SAME: attributes {note = #rtx.sharding<@mesh_nowhere, {{\[}}["a"]], partial = ["b"]>}
func.func @sharding_as_plain_attribute() attributes {note = #rtx.sharding<@mesh_nowhere, [["a"]], partial = ["b"]>} {
  return
}
