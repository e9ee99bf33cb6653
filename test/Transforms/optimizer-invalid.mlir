// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=lion' -verify-diagnostics

// expected-error @below {{rtx-optimizer: unknown kind 'lion'; expected sgd or adamw}}
module {
  func.func @f() -> tensor<f32> {
    %w = rtx.param "w" ones : tensor<3xf32>
    %l = rtx.reduce sum %w dims [0] : tensor<3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
