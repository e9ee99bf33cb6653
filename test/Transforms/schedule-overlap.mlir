// RUN: rtx-opt %s -split-input-file -rtx-schedule-overlap | FileCheck %s

// An all-reduce whose result is used later becomes a start at its place and
// a wait right before the first use; the compute in between overlaps it.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @overlapped
func.func @overlapped(%g: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: %[[T:.*]] = rtx.all_reduce_start %arg0 on @mesh_dp2 ["dp"] sum : tensor<8xf32> -> !rtx.token<tensor<8xf32>>
  // CHECK-NEXT: rtx.exp %arg1
  // CHECK-NEXT: rtx.tanh
  // CHECK-NEXT: %[[R:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<8xf32>> -> tensor<8xf32>
  // CHECK-NEXT: rtx.add %{{.*}}, %[[R]]
  // CHECK-NOT: rtx.all_reduce
  %r = rtx.all_reduce %g on @mesh_dp2 ["dp"] sum : tensor<8xf32> -> tensor<8xf32>
  %a = rtx.exp %x : tensor<8xf32>
  %b = rtx.tanh %a : tensor<8xf32>
  %c = rtx.add %b, %r : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// Used by the very next op: nothing to overlap with, left as it is.
rtx.mesh @mesh_tp2 ["tp"=2]
// CHECK-LABEL: func.func @used_at_once
func.func @used_at_once(%g: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: rtx.all_reduce %arg0
  // CHECK-NOT: rtx.all_reduce_start
  %r = rtx.all_reduce %g on @mesh_tp2 ["tp"] sum : tensor<8xf32> -> tensor<8xf32>
  %a = rtx.exp %r : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// A partitioned program's sharding describes the reduced tensor: it moves to
// the wait; the start's result is a token, which has none.
rtx.mesh @mesh_dp2 ["dp"=2]
// CHECK-LABEL: func.func @sharded
func.func @sharded(%g: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: rtx.all_reduce_start %arg0 on @mesh_dp2 ["dp"] sum : tensor<8xf32>
  // CHECK: rtx.wait %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_dp2, {{\[\[\]\]}}>}
  %r = rtx.all_reduce %g on @mesh_dp2 ["dp"] sum {rtx.sharding = #rtx.sharding<@mesh_dp2, [[]]>} : tensor<8xf32> -> tensor<8xf32>
  %a = rtx.exp %x : tensor<8xf32>
  %c = rtx.add %a, %r : tensor<8xf32>
  return %c : tensor<8xf32>
}
