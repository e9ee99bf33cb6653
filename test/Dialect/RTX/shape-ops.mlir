// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Shape manipulation: rtx.reshape, rtx.transpose, rtx.slice, rtx.split,
// rtx.concat, rtx.broadcast. rtx.reduce carries an enum attribute and is
// tested in enum-attrs.mlir.

// CHECK-LABEL: func.func @reshape_head_split
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x13x64xf32>)
// CHECK: %[[H:.*]] = rtx.reshape %[[X]] : tensor<2x13x64xf32> -> tensor<2x13x4x16xf32>
// CHECK: %[[M:.*]] = rtx.reshape %[[H]] : tensor<2x13x4x16xf32> -> tensor<2x13x64xf32>
// CHECK: return %[[M]]
func.func @reshape_head_split(%x: tensor<2x13x64xf32>) -> tensor<2x13x64xf32> {
  %h = rtx.reshape %x : tensor<2x13x64xf32> -> tensor<2x13x4x16xf32>
  %m = rtx.reshape %h : tensor<2x13x4x16xf32> -> tensor<2x13x64xf32>
  return %m : tensor<2x13x64xf32>
}

// -----

// Non-factorable reshapes, integer and scalar tensors.
// CHECK-LABEL: func.func @reshape_other
// CHECK: rtx.reshape %{{.*}} : tensor<6x4xi32> -> tensor<4x6xi32>
// CHECK: rtx.reshape %{{.*}} : tensor<1x1xf32> -> tensor<f32>
// CHECK: rtx.reshape %{{.*}} : tensor<f32> -> tensor<1xf32>
func.func @reshape_other(%a: tensor<6x4xi32>, %b: tensor<1x1xf32>) -> (tensor<4x6xi32>, tensor<1xf32>) {
  %0 = rtx.reshape %a : tensor<6x4xi32> -> tensor<4x6xi32>
  %1 = rtx.reshape %b : tensor<1x1xf32> -> tensor<f32>
  %2 = rtx.reshape %1 : tensor<f32> -> tensor<1xf32>
  return %0, %2 : tensor<4x6xi32>, tensor<1xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_heads
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13x12x64xf32>)
// CHECK: %[[T:.*]] = rtx.transpose %[[X]] [0, 2, 1, 3] : tensor<8x13x12x64xf32> -> tensor<8x12x13x64xf32>
// CHECK: return %[[T]]
func.func @transpose_heads(%x: tensor<8x13x12x64xf32>) -> tensor<8x12x13x64xf32> {
  %t = rtx.transpose %x [0, 2, 1, 3] : tensor<8x13x12x64xf32> -> tensor<8x12x13x64xf32>
  return %t : tensor<8x12x13x64xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_other
// CHECK: rtx.transpose %{{.*}} [1, 0] : tensor<7x13xi1> -> tensor<13x7xi1>
// CHECK: rtx.transpose %{{.*}} [2, 0, 1] : tensor<7x13x65xbf16> -> tensor<65x7x13xbf16>
// CHECK: rtx.transpose %{{.*}} [] : tensor<f32> -> tensor<f32>
func.func @transpose_other(%a: tensor<7x13xi1>, %b: tensor<7x13x65xbf16>, %c: tensor<f32>) -> (tensor<13x7xi1>, tensor<65x7x13xbf16>, tensor<f32>) {
  %0 = rtx.transpose %a [1, 0] : tensor<7x13xi1> -> tensor<13x7xi1>
  %1 = rtx.transpose %b [2, 0, 1] : tensor<7x13x65xbf16> -> tensor<65x7x13xbf16>
  %2 = rtx.transpose %c [] : tensor<f32> -> tensor<f32>
  return %0, %1, %2 : tensor<13x7xi1>, tensor<65x7x13xbf16>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @slice_causal_bias
// CHECK-SAME: (%[[B:[^:]*]]: tensor<1x1x64x64xf32>)
// CHECK: %[[S:.*]] = rtx.slice %[[B]] [0:1, 0:1, 0:13, 0:13] : tensor<1x1x64x64xf32> -> tensor<1x1x13x13xf32>
// CHECK: return %[[S]]
func.func @slice_causal_bias(%bias: tensor<1x1x64x64xf32>) -> tensor<1x1x13x13xf32> {
  %s = rtx.slice %bias [0:1, 0:1, 0:13, 0:13] : tensor<1x1x64x64xf32> -> tensor<1x1x13x13xf32>
  return %s : tensor<1x1x13x13xf32>
}

// -----

// Non-zero starts, an empty range, a rank-0 slice.
// CHECK-LABEL: func.func @slice_other
// CHECK: rtx.slice %{{.*}} [2:7, 13:65] : tensor<7x65xi64> -> tensor<5x52xi64>
// CHECK: rtx.slice %{{.*}} [3:3, 0:65] : tensor<7x65xi64> -> tensor<0x65xi64>
// CHECK: rtx.slice %{{.*}} [] : tensor<f32> -> tensor<f32>
func.func @slice_other(%x: tensor<7x65xi64>, %s: tensor<f32>) -> (tensor<5x52xi64>, tensor<0x65xi64>, tensor<f32>) {
  %0 = rtx.slice %x [2:7, 13:65] : tensor<7x65xi64> -> tensor<5x52xi64>
  %1 = rtx.slice %x [3:3, 0:65] : tensor<7x65xi64> -> tensor<0x65xi64>
  %2 = rtx.slice %s [] : tensor<f32> -> tensor<f32>
  return %0, %1, %2 : tensor<5x52xi64>, tensor<0x65xi64>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @split_qkv
// CHECK-SAME: (%[[QKV:[^:]*]]: tensor<8x13x2304xf32>)
// CHECK: %[[S:.*]]:3 = rtx.split %[[QKV]] dim 2 : tensor<8x13x2304xf32> -> tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x768xf32>
// CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @split_qkv(%qkv: tensor<8x13x2304xf32>) -> (tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x768xf32>) {
  %q, %k, %v = rtx.split %qkv dim 2 : tensor<8x13x2304xf32> -> tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x768xf32>
  return %q, %k, %v : tensor<8x13x768xf32>, tensor<8x13x768xf32>, tensor<8x13x768xf32>
}

// -----

// Uneven pieces, and a single piece.
// CHECK-LABEL: func.func @split_uneven_and_single
// CHECK: %{{.*}}:2 = rtx.split %{{.*}} dim 0 : tensor<13x7xi32> -> tensor<6x7xi32>, tensor<7x7xi32>
// CHECK: %{{.*}} = rtx.split %{{.*}} dim 1 : tensor<13x7xi32> -> tensor<13x7xi32>
func.func @split_uneven_and_single(%x: tensor<13x7xi32>) -> (tensor<6x7xi32>, tensor<7x7xi32>, tensor<13x7xi32>) {
  %a, %b = rtx.split %x dim 0 : tensor<13x7xi32> -> tensor<6x7xi32>, tensor<7x7xi32>
  %c = rtx.split %x dim 1 : tensor<13x7xi32> -> tensor<13x7xi32>
  return %a, %b, %c : tensor<6x7xi32>, tensor<7x7xi32>, tensor<13x7xi32>
}

// -----

// CHECK-LABEL: func.func @concat_two
// CHECK-SAME: (%[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<4x3xf32>)
// CHECK: %[[C:.*]] = rtx.concat %[[A]], %[[B]] dim 1 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
// CHECK: return %[[C]]
func.func @concat_two(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) -> tensor<4x11xf32> {
  %c = rtx.concat %a, %b dim 1 : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<4x11xf32>
  return %c : tensor<4x11xf32>
}

// -----

// CHECK-LABEL: func.func @concat_three_and_single
// CHECK: rtx.concat %{{.*}}, %{{.*}}, %{{.*}} dim 0 : tensor<7x13xbf16>, tensor<1x13xbf16>, tensor<5x13xbf16> -> tensor<13x13xbf16>
// CHECK: rtx.concat %{{.*}} dim 0 : tensor<7x13xbf16> -> tensor<7x13xbf16>
func.func @concat_three_and_single(%a: tensor<7x13xbf16>, %b: tensor<1x13xbf16>, %c: tensor<5x13xbf16>) -> (tensor<13x13xbf16>, tensor<7x13xbf16>) {
  %0 = rtx.concat %a, %b, %c dim 0 : tensor<7x13xbf16>, tensor<1x13xbf16>, tensor<5x13xbf16> -> tensor<13x13xbf16>
  %1 = rtx.concat %a dim 0 : tensor<7x13xbf16> -> tensor<7x13xbf16>
  return %0, %1 : tensor<13x13xbf16>, tensor<7x13xbf16>
}

// -----

// CHECK-LABEL: func.func @broadcast_bias
// CHECK-SAME: (%[[B:[^:]*]]: tensor<768xf32>)
// CHECK: %[[R:.*]] = rtx.broadcast %[[B]] dims [2] : tensor<768xf32> -> tensor<8x13x768xf32>
// CHECK: return %[[R]]
func.func @broadcast_bias(%b: tensor<768xf32>) -> tensor<8x13x768xf32> {
  %r = rtx.broadcast %b dims [2] : tensor<768xf32> -> tensor<8x13x768xf32>
  return %r : tensor<8x13x768xf32>
}

// -----

// Size-1 dimensions that are repeated, a scalar, a mask.
// CHECK-LABEL: func.func @broadcast_other
// CHECK: rtx.broadcast %{{.*}} dims [0, 2] : tensor<7x1xf32> -> tensor<7x13x65xf32>
// CHECK: rtx.broadcast %{{.*}} dims [] : tensor<f32> -> tensor<7x13xf32>
// CHECK: rtx.broadcast %{{.*}} dims [1, 2] : tensor<13x13xi1> -> tensor<2x13x13xi1>
func.func @broadcast_other(%a: tensor<7x1xf32>, %s: tensor<f32>, %m: tensor<13x13xi1>) -> (tensor<7x13x65xf32>, tensor<7x13xf32>, tensor<2x13x13xi1>) {
  %0 = rtx.broadcast %a dims [0, 2] : tensor<7x1xf32> -> tensor<7x13x65xf32>
  %1 = rtx.broadcast %s dims [] : tensor<f32> -> tensor<7x13xf32>
  %2 = rtx.broadcast %m dims [1, 2] : tensor<13x13xi1> -> tensor<2x13x13xi1>
  return %0, %1, %2 : tensor<7x13x65xf32>, tensor<7x13xf32>, tensor<2x13x13xi1>
}
