// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=2' -verify-diagnostics

// expected-error @+1 {{argument 0 is a scalar: there is no batch dimension to split into 2 micro-batches}}
func.func @scalar_argument(%s: tensor<f32>) -> tensor<f32> {
  %w = rtx.param "w" ones : tensor<f32>
  %l = rtx.mul %w, %s : tensor<f32>
  return %l : tensor<f32>
}
