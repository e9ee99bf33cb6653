// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file | rtx-opt -split-input-file | FileCheck %s

// Ops with an enum attribute: rtx.compare (#rtx.predicate), rtx.reduce,
// rtx.all_reduce(_start) and rtx.reduce_scatter(_start) (#rtx.reduction).
//
// The second RUN line re-parses the printed custom form. The generic-form
// round trip of this file is enum-attrs-generic.mlir, expected to fail: the
// enum attributes print as `#rtx.reductionsum` / `#rtx.predicateeq` in the
// generic form, which does not parse back.

// CHECK-LABEL: func.func @compare_every_predicate
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>, %[[Y:[^:]*]]: tensor<7x13xf32>)
// CHECK: rtx.compare eq, %[[X]], %[[Y]] : tensor<7x13xf32> -> tensor<7x13xi1>
// CHECK: rtx.compare ne, %[[X]], %[[Y]] : tensor<7x13xf32> -> tensor<7x13xi1>
// CHECK: rtx.compare lt, %[[X]], %[[Y]] : tensor<7x13xf32> -> tensor<7x13xi1>
// CHECK: rtx.compare le, %[[X]], %[[Y]] : tensor<7x13xf32> -> tensor<7x13xi1>
// CHECK: rtx.compare gt, %[[X]], %[[Y]] : tensor<7x13xf32> -> tensor<7x13xi1>
// CHECK: rtx.compare ge, %[[Y]], %[[X]] : tensor<7x13xf32> -> tensor<7x13xi1>
func.func @compare_every_predicate(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> (tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>) {
  %0 = rtx.compare eq, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  %1 = rtx.compare ne, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  %2 = rtx.compare lt, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  %3 = rtx.compare le, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  %4 = rtx.compare gt, %x, %y : tensor<7x13xf32> -> tensor<7x13xi1>
  %5 = rtx.compare ge, %y, %x : tensor<7x13xf32> -> tensor<7x13xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>, tensor<7x13xi1>
}

// -----

// Integer, mask and scalar operands.
// CHECK-LABEL: func.func @compare_other_types
// CHECK: rtx.compare lt, %{{.*}}, %{{.*}} : tensor<13xi32> -> tensor<13xi1>
// CHECK: rtx.compare eq, %{{.*}}, %{{.*}} : tensor<13xi1> -> tensor<13xi1>
// CHECK: rtx.compare ne, %{{.*}}, %{{.*}} : tensor<bf16> -> tensor<i1>
func.func @compare_other_types(%i: tensor<13xi32>, %m: tensor<13xi1>, %s: tensor<bf16>) -> (tensor<13xi1>, tensor<13xi1>, tensor<i1>) {
  %0 = rtx.compare lt, %i, %i : tensor<13xi32> -> tensor<13xi1>
  %1 = rtx.compare eq, %m, %m : tensor<13xi1> -> tensor<13xi1>
  %2 = rtx.compare ne, %s, %s : tensor<bf16> -> tensor<i1>
  return %0, %1, %2 : tensor<13xi1>, tensor<13xi1>, tensor<i1>
}

// -----

// CHECK-LABEL: func.func @reduce_every_kind
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>)
// CHECK: %{{.*}} = rtx.reduce sum %[[X]] dims [1] : tensor<7x13xf32> -> tensor<7xf32>
// CHECK: %{{.*}} = rtx.reduce mean %[[X]] dims [0] : tensor<7x13xf32> -> tensor<13xf32>
// CHECK: %{{.*}} = rtx.reduce max %[[X]] dims [1] keepdim : tensor<7x13xf32> -> tensor<7x1xf32>
// CHECK: %{{.*}} = rtx.reduce min %[[X]] dims [0] keepdim : tensor<7x13xf32> -> tensor<1x13xf32>
func.func @reduce_every_kind(%x: tensor<7x13xf32>) -> (tensor<7xf32>, tensor<13xf32>, tensor<7x1xf32>, tensor<1x13xf32>) {
  %0 = rtx.reduce sum %x dims [1] : tensor<7x13xf32> -> tensor<7xf32>
  %1 = rtx.reduce mean %x dims [0] : tensor<7x13xf32> -> tensor<13xf32>
  %2 = rtx.reduce max %x dims [1] keepdim : tensor<7x13xf32> -> tensor<7x1xf32>
  %3 = rtx.reduce min %x dims [0] keepdim : tensor<7x13xf32> -> tensor<1x13xf32>
  return %0, %1, %2, %3 : tensor<7xf32>, tensor<13xf32>, tensor<7x1xf32>, tensor<1x13xf32>
}

// -----

// Several dimensions, all dimensions (to a scalar), no dimension.
// CHECK-LABEL: func.func @reduce_dim_lists
// CHECK: rtx.reduce sum %{{.*}} dims [0, 2] : tensor<2x7x13xbf16> -> tensor<7xbf16>
// CHECK: rtx.reduce mean %{{.*}} dims [0, 1, 2] : tensor<2x7x13xbf16> -> tensor<bf16>
// CHECK: rtx.reduce max %{{.*}} dims [0, 1, 2] keepdim : tensor<2x7x13xbf16> -> tensor<1x1x1xbf16>
// CHECK: rtx.reduce sum %{{.*}} dims [] : tensor<2x7x13xbf16> -> tensor<2x7x13xbf16>
func.func @reduce_dim_lists(%x: tensor<2x7x13xbf16>) -> (tensor<7xbf16>, tensor<bf16>, tensor<1x1x1xbf16>, tensor<2x7x13xbf16>) {
  %0 = rtx.reduce sum %x dims [0, 2] : tensor<2x7x13xbf16> -> tensor<7xbf16>
  %1 = rtx.reduce mean %x dims [0, 1, 2] : tensor<2x7x13xbf16> -> tensor<bf16>
  %2 = rtx.reduce max %x dims [0, 1, 2] keepdim : tensor<2x7x13xbf16> -> tensor<1x1x1xbf16>
  %3 = rtx.reduce sum %x dims [] : tensor<2x7x13xbf16> -> tensor<2x7x13xbf16>
  return %0, %1, %2, %3 : tensor<7xbf16>, tensor<bf16>, tensor<1x1x1xbf16>, tensor<2x7x13xbf16>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @all_reduce_every_kind
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>)
// CHECK: rtx.all_reduce %[[X]] on @mesh_dp2_tp4 ["tp"] sum : tensor<7x13xf32> -> tensor<7x13xf32>
// CHECK: rtx.all_reduce %[[X]] on @mesh_dp2_tp4 ["dp"] mean : tensor<7x13xf32> -> tensor<7x13xf32>
// CHECK: rtx.all_reduce %[[X]] on @mesh_dp2_tp4 ["dp", "tp"] max : tensor<7x13xf32> -> tensor<7x13xf32>
// CHECK: rtx.all_reduce %[[X]] on @mesh_dp2_tp4 ["tp", "dp"] min : tensor<7x13xf32> -> tensor<7x13xf32>
func.func @all_reduce_every_kind(%x: tensor<7x13xf32>) -> (tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>) {
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum : tensor<7x13xf32> -> tensor<7x13xf32>
  %1 = rtx.all_reduce %x on @mesh_dp2_tp4 ["dp"] mean : tensor<7x13xf32> -> tensor<7x13xf32>
  %2 = rtx.all_reduce %x on @mesh_dp2_tp4 ["dp", "tp"] max : tensor<7x13xf32> -> tensor<7x13xf32>
  %3 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp", "dp"] min : tensor<7x13xf32> -> tensor<7x13xf32>
  return %0, %1, %2, %3 : tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @all_reduce_start_wait
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>)
// CHECK: %[[T:.*]] = rtx.all_reduce_start %[[X]] on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
// CHECK: %[[Y:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: return %[[Y]]
func.func @all_reduce_start_wait(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  %y = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13xf32>)
// CHECK: %[[Y:.*]] = rtx.reduce_scatter %[[X]] on @mesh_dp2_tp4 ["tp"] sum dim 0 : tensor<8x13xf32> -> tensor<2x13xf32>
// CHECK: %[[T:.*]] = rtx.reduce_scatter_start %[[X]] on @mesh_dp2_tp4 ["dp", "tp"] mean dim 0 : tensor<8x13xf32> -> !rtx.token<tensor<1x13xf32>>
// CHECK: %[[Z:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<1x13xf32>> -> tensor<1x13xf32>
// CHECK: return %[[Y]], %[[Z]]
func.func @reduce_scatter(%x: tensor<8x13xf32>) -> (tensor<2x13xf32>, tensor<1x13xf32>) {
  %y = rtx.reduce_scatter %x on @mesh_dp2_tp4 ["tp"] sum dim 0 : tensor<8x13xf32> -> tensor<2x13xf32>
  %t = rtx.reduce_scatter_start %x on @mesh_dp2_tp4 ["dp", "tp"] mean dim 0 : tensor<8x13xf32> -> !rtx.token<tensor<1x13xf32>>
  %z = rtx.wait %t : !rtx.token<tensor<1x13xf32>> -> tensor<1x13xf32>
  return %y, %z : tensor<2x13xf32>, tensor<1x13xf32>
}

// -----

rtx.mesh @mesh_dp13 ["dp"=13]

// CHECK-LABEL: func.func @reduce_scatter_odd_group
// CHECK: rtx.reduce_scatter %{{.*}} on @mesh_dp13 ["dp"] max dim 1 : tensor<7x65xbf16> -> tensor<7x5xbf16>
// CHECK: rtx.reduce_scatter_start %{{.*}} on @mesh_dp13 ["dp"] min dim 1 : tensor<7x65xbf16> -> !rtx.token<tensor<7x5xbf16>>
func.func @reduce_scatter_odd_group(%x: tensor<7x65xbf16>) -> tensor<7x5xbf16> {
  %y = rtx.reduce_scatter %x on @mesh_dp13 ["dp"] max dim 1 : tensor<7x65xbf16> -> tensor<7x5xbf16>
  %t = rtx.reduce_scatter_start %x on @mesh_dp13 ["dp"] min dim 1 : tensor<7x65xbf16> -> !rtx.token<tensor<7x5xbf16>>
  %z = rtx.wait %t : !rtx.token<tensor<7x5xbf16>> -> tensor<7x5xbf16>
  return %y : tensor<7x5xbf16>
}
