// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Collectives in synchronous and `*_start` form, point-to-point ops and
// rtx.wait. rtx.all_reduce and rtx.reduce_scatter (and their `*_start` forms)
// carry a reduction-kind enum attribute and are tested in enum-attrs.mlir.

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @all_gather
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x2xf32>)
// CHECK: %[[Y:.*]] = rtx.all_gather %[[X]] on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> tensor<4x8xf32>
// CHECK: %[[T:.*]] = rtx.all_gather_start %[[X]] on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> !rtx.token<tensor<4x8xf32>>
// CHECK: %[[Z:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: return %[[Y]], %[[Z]]
func.func @all_gather(%x: tensor<4x2xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = rtx.all_gather %x on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> tensor<4x8xf32>
  %t = rtx.all_gather_start %x on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> !rtx.token<tensor<4x8xf32>>
  %z = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A group over two axes has 2 * 4 ranks; an axis of size 13.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]
rtx.mesh @mesh_dp13 ["dp"=13]

// CHECK-LABEL: func.func @all_gather_multi_axis_and_odd
// CHECK: rtx.all_gather %{{.*}} on @mesh_dp2_tp4 ["dp", "tp"] dim 0 : tensor<7x13xbf16> -> tensor<56x13xbf16>
// CHECK: rtx.all_gather %{{.*}} on @mesh_dp2_tp4 ["tp", "dp"] dim 0 : tensor<7x13xbf16> -> tensor<56x13xbf16>
// CHECK: rtx.all_gather %{{.*}} on @mesh_dp13 ["dp"] dim 1 : tensor<7x5xi32> -> tensor<7x65xi32>
func.func @all_gather_multi_axis_and_odd(%x: tensor<7x13xbf16>, %i: tensor<7x5xi32>) -> (tensor<56x13xbf16>, tensor<56x13xbf16>, tensor<7x65xi32>) {
  %0 = rtx.all_gather %x on @mesh_dp2_tp4 ["dp", "tp"] dim 0 : tensor<7x13xbf16> -> tensor<56x13xbf16>
  %1 = rtx.all_gather %x on @mesh_dp2_tp4 ["tp", "dp"] dim 0 : tensor<7x13xbf16> -> tensor<56x13xbf16>
  %2 = rtx.all_gather %i on @mesh_dp13 ["dp"] dim 1 : tensor<7x5xi32> -> tensor<7x65xi32>
  return %0, %1, %2 : tensor<56x13xbf16>, tensor<56x13xbf16>, tensor<7x65xi32>
}

// -----

rtx.mesh @mesh_sp4 ["sp"=4]

// CHECK-LABEL: func.func @all_to_all
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x4x16xf32>)
// CHECK: %[[Y:.*]] = rtx.all_to_all %[[X]] on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x8x4x16xf32> -> tensor<2x2x16x16xf32>
// CHECK: %[[T:.*]] = rtx.all_to_all_start %[[X]] on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x8x4x16xf32> -> !rtx.token<tensor<2x2x16x16xf32>>
// CHECK: %[[Z:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<2x2x16x16xf32>> -> tensor<2x2x16x16xf32>
// CHECK: return %[[Y]], %[[Z]]
func.func @all_to_all(%x: tensor<2x8x4x16xf32>) -> (tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) {
  %y = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x8x4x16xf32> -> tensor<2x2x16x16xf32>
  %t = rtx.all_to_all_start %x on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x8x4x16xf32> -> !rtx.token<tensor<2x2x16x16xf32>>
  %z = rtx.wait %t : !rtx.token<tensor<2x2x16x16xf32>> -> tensor<2x2x16x16xf32>
  return %y, %z : tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>
}

// -----

// Split and concat along the same dimension keep the shape.
rtx.mesh @mesh_sp4 ["sp"=4]

// CHECK-LABEL: func.func @all_to_all_same_dim
// CHECK: rtx.all_to_all %{{.*}} on @mesh_sp4 ["sp"] split 0 concat 0 : tensor<8x13xf32> -> tensor<8x13xf32>
func.func @all_to_all_same_dim(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  %y = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 0 concat 0 : tensor<8x13xf32> -> tensor<8x13xf32>
  return %y : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @broadcast_from
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>)
// CHECK: %[[Y:.*]] = rtx.broadcast_from %[[X]] on @mesh_dp2_tp4 ["dp"] root 0 : tensor<7x13xf32> -> tensor<7x13xf32>
// CHECK: %[[T:.*]] = rtx.broadcast_from_start %[[X]] on @mesh_dp2_tp4 ["dp", "tp"] root 7 : tensor<7x13xf32> -> !rtx.token<tensor<7x13xf32>>
// CHECK: %[[Z:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<7x13xf32>> -> tensor<7x13xf32>
// CHECK: return %[[Y]], %[[Z]]
func.func @broadcast_from(%x: tensor<7x13xf32>) -> (tensor<7x13xf32>, tensor<7x13xf32>) {
  %y = rtx.broadcast_from %x on @mesh_dp2_tp4 ["dp"] root 0 : tensor<7x13xf32> -> tensor<7x13xf32>
  %t = rtx.broadcast_from_start %x on @mesh_dp2_tp4 ["dp", "tp"] root 7 : tensor<7x13xf32> -> !rtx.token<tensor<7x13xf32>>
  %z = rtx.wait %t : !rtx.token<tensor<7x13xf32>> -> tensor<7x13xf32>
  return %y, %z : tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

// CHECK-LABEL: func.func @permute
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>)
// CHECK: %[[Y:.*]] = rtx.permute %[[X]] on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[T:.*]] = rtx.permute_start %[[X]] on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
// CHECK: %[[Z:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: return %[[Y]], %[[Z]]
func.func @permute(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %y = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3] : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = rtx.permute_start %x on @mesh_pp4 ["pp"] [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  %z = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
  return %y, %z : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// No pairs at all (every rank receives zeros), and a swap.
rtx.mesh @mesh_pp4 ["pp"=4]

// CHECK-LABEL: func.func @permute_empty_and_swap
// CHECK: rtx.permute %{{.*}} on @mesh_pp4 ["pp"] [] : tensor<13xi64> -> tensor<13xi64>
// CHECK: rtx.permute %{{.*}} on @mesh_pp4 ["pp"] [3 -> 0, 0 -> 3] : tensor<13xi64> -> tensor<13xi64>
func.func @permute_empty_and_swap(%x: tensor<13xi64>) -> (tensor<13xi64>, tensor<13xi64>) {
  %0 = rtx.permute %x on @mesh_pp4 ["pp"] [] : tensor<13xi64> -> tensor<13xi64>
  %1 = rtx.permute %x on @mesh_pp4 ["pp"] [3 -> 0, 0 -> 3] : tensor<13xi64> -> tensor<13xi64>
  return %0, %1 : tensor<13xi64>, tensor<13xi64>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

// CHECK-LABEL: func.func @send_recv
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>)
// CHECK: rtx.send %[[X]] to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32>
// CHECK: %[[R:.*]] = rtx.recv from @mesh_pp4 ["pp"] peer 3 tag 5 : tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @send_recv(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  rtx.send %x to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32>
  %r = rtx.recv from @mesh_pp4 ["pp"] peer 3 tag 5 : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// The tag defaults to 0; the generic form may leave it out.
rtx.mesh @mesh_pp4 ["pp"=4]

// CHECK-LABEL: func.func @send_recv_default_tag
// CHECK: rtx.send %{{.*}} to @mesh_pp4 ["pp"] peer 2 tag 0 : tensor<7xi32>
// CHECK: rtx.recv from @mesh_pp4 ["pp"] peer 2 tag 0 : tensor<7xi32>
func.func @send_recv_default_tag(%x: tensor<7xi32>) -> tensor<7xi32> {
  "rtx.send"(%x) <{mesh = @mesh_pp4, axes = ["pp"], peer = 2 : i64}> : (tensor<7xi32>) -> ()
  %r = "rtx.recv"() <{mesh = @mesh_pp4, axes = ["pp"], peer = 2 : i64}> : () -> tensor<7xi32>
  return %r : tensor<7xi32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

// CHECK-LABEL: func.func @send_start_recv_start
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4x8xf32>)
// CHECK: %[[ST:.*]] = rtx.send_start %[[X]] to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32> -> !rtx.token
// CHECK: %[[RT:.*]] = rtx.recv_start from @mesh_pp4 ["pp"] peer 0 tag 0 -> !rtx.token<tensor<4x8xf32>>
// CHECK: rtx.wait %[[ST]] : !rtx.token{{$}}
// CHECK: %[[R:.*]] = rtx.wait %[[RT]] : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @send_start_recv_start(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %st = rtx.send_start %x to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32> -> !rtx.token
  %rt = rtx.recv_start from @mesh_pp4 ["pp"] peer 0 tag 0 -> !rtx.token<tensor<4x8xf32>>
  rtx.wait %st : !rtx.token
  %r = rtx.wait %rt : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Point-to-point over a two-axis group: peer ranges over all 8 ranks.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @send_recv_multi_axis
// CHECK: rtx.send %{{.*}} to @mesh_dp2_tp4 ["dp", "tp"] peer 7 tag 3 : tensor<13xbf16>
// CHECK: rtx.recv from @mesh_dp2_tp4 ["dp", "tp"] peer 7 tag 3 : tensor<13xbf16>
func.func @send_recv_multi_axis(%x: tensor<13xbf16>) -> tensor<13xbf16> {
  rtx.send %x to @mesh_dp2_tp4 ["dp", "tp"] peer 7 tag 3 : tensor<13xbf16>
  %r = rtx.recv from @mesh_dp2_tp4 ["dp", "tp"] peer 7 tag 3 : tensor<13xbf16>
  return %r : tensor<13xbf16>
}

// -----

// Collectives may name a mesh declared later in the module, and the module
// may be named.
// CHECK-LABEL: module @outer
// CHECK: rtx.mesh @mesh_tp2 ["tp"=2]
// CHECK-LABEL: func.func @mesh_lookup
// CHECK: rtx.all_gather %{{.*}} on @mesh_tp2 ["tp"] dim 0 : tensor<7xf32> -> tensor<14xf32>
// CHECK: rtx.mesh @mesh_late_tp2 ["tp"=2]
module @outer {
  rtx.mesh @mesh_tp2 ["tp"=2]
  func.func @mesh_lookup(%x: tensor<7xf32>) -> (tensor<14xf32>, tensor<14xf32>) {
    %0 = rtx.all_gather %x on @mesh_tp2 ["tp"] dim 0 : tensor<7xf32> -> tensor<14xf32>
    %1 = rtx.all_gather %x on @mesh_late_tp2 ["tp"] dim 0 : tensor<7xf32> -> tensor<14xf32>
    return %0, %1 : tensor<14xf32>, tensor<14xf32>
  }
  rtx.mesh @mesh_late_tp2 ["tp"=2]
}
