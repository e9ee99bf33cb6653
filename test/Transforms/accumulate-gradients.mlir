// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=2' | FileCheck %s

// The batch grows 2x; micro-batch j takes rows j, j+2, j+4, ... (the batch
// viewed as [4, 2, 3], column j); parameters are shared; the loss and the
// gradients are averaged over the micro-batches.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x3xf32>)
// CHECK-COUNT-1: rtx.param "w"
// CHECK: %[[V0:.*]] = rtx.reshape %[[X]] : tensor<8x3xf32> -> tensor<4x2x3xf32>
// CHECK: %[[S0:.*]] = rtx.slice %[[V0]] [0:4, 0:1, 0:3] : tensor<4x2x3xf32> -> tensor<4x1x3xf32>
// CHECK: %[[X0:.*]] = rtx.reshape %[[S0]] : tensor<4x1x3xf32> -> tensor<4x3xf32>
// CHECK: rtx.linear %[[X0]]
// CHECK: %[[G0:.*]] = rtx.matmul
// CHECK: %[[V1:.*]] = rtx.reshape %[[X]] : tensor<8x3xf32> -> tensor<4x2x3xf32>
// CHECK: %[[S1:.*]] = rtx.slice %[[V1]] [0:4, 1:2, 0:3] : tensor<4x2x3xf32> -> tensor<4x1x3xf32>
// CHECK: %[[X1:.*]] = rtx.reshape %[[S1]] : tensor<4x1x3xf32> -> tensor<4x3xf32>
// CHECK: rtx.linear %[[X1]]
// CHECK: %[[G1:.*]] = rtx.matmul
// CHECK: %[[HALF:.*]] = rtx.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[GSUM:.*]] = rtx.add %[[G0]], %[[G1]] : tensor<2x3xf32>
// CHECK: %[[GHALF:.*]] = rtx.constant dense<5.000000e-01> : tensor<2x3xf32>
// CHECK: %[[G:.*]] = rtx.mul %[[GSUM]], %[[GHALF]]
// CHECK: return %{{.*}}, %[[G]]
func.func @mlp(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) : tensor<2x3xf32>
  %y = rtx.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

