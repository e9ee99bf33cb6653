// RUN: rtx-opt %s -split-input-file -rtx-autodiff -verify-diagnostics

rtx.mesh @mesh_tp2 ["tp"=2]

// A collective between a parameter and the loss has no VJP (autodiff runs
// before partitioning).
func.func @collective_on_the_path() -> tensor<f32> {
  %w = rtx.param "w" ones : tensor<4xf32>
  // expected-error @+1 {{'rtx.all_reduce' has no VJP, but it lies between a parameter and the loss}}
  %r = rtx.all_reduce %w on @mesh_tp2 ["tp"] sum : tensor<4xf32> -> tensor<4xf32>
  %l = rtx.reduce sum %r dims [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
