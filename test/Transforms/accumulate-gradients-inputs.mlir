// RUN: rtx-opt %s -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=3' | FileCheck %s

// rtx.input values grow and are sliced too.
// CHECK-LABEL: func.func @named_inputs
// CHECK: %[[T:.*]] = rtx.input "tokens" : tensor<6x5xi32>
// CHECK: %[[V0:.*]] = rtx.reshape %[[T]] : tensor<6x5xi32> -> tensor<2x3x5xi32>
// CHECK: rtx.slice %[[V0]] [0:2, 0:1, 0:5]
// CHECK: %[[V1:.*]] = rtx.reshape %[[T]] : tensor<6x5xi32> -> tensor<2x3x5xi32>
// CHECK: rtx.slice %[[V1]] [0:2, 1:2, 0:5]
// CHECK: %[[V2:.*]] = rtx.reshape %[[T]] : tensor<6x5xi32> -> tensor<2x3x5xi32>
// CHECK: rtx.slice %[[V2]] [0:2, 2:3, 0:5]
func.func @named_inputs() -> tensor<f32> {
  %t = rtx.input "tokens" : tensor<2x5xi32>
  %wte = rtx.param "wte" normal(0.0, 1.0) : tensor<7x4xf32>
  %x = rtx.embedding %wte, %t : tensor<7x4xf32>, tensor<2x5xi32> -> tensor<2x5x4xf32>
  %l = rtx.reduce mean %x dims [0, 1, 2] : tensor<2x5x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
