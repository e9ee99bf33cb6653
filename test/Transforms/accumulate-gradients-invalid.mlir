// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=2' -verify-diagnostics
// A count below 1 is an error that names the option and its value (it
// printed -2 as a raw byte before).
// RUN: not rtx-opt %s -split-input-file -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=0' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not rtx-opt %s -split-input-file -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=-2' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// ZERO: error: rtx-accumulate-gradients: micro-batches=0 must be at least 1 (1: no gradient accumulation)
// NEGATIVE: error: rtx-accumulate-gradients: micro-batches=-2 must be at least 1 (1: no gradient accumulation)

// expected-error @+1 {{argument 0 is a scalar: there is no batch dimension to split into 2 micro-batches}}
func.func @scalar_argument(%s: tensor<f32>) -> tensor<f32> {
  %w = rtx.param "w" ones : tensor<f32>
  %l = rtx.mul %w, %s : tensor<f32>
  return %l : tensor<f32>
}
