// RUN: rtx-opt %s -split-input-file -rtx-split-stages=stages=3 -verify-diagnostics

// expected-error @+1 {{cannot split one_boundary into 3 pipeline stages: it has 1 layer boundaries (places where one tensor is live), so at most 2 stages}}
func.func @one_boundary() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x : tensor<4x8xf32>
  %l = rtx.reduce sum %a dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @decreasing() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x {rtx.stage = 2 : i64} : tensor<4x8xf32>
  // expected-error @+1 {{stage 1 after an op of stage 2: stages must not decrease in program order}}
  %b = rtx.relu %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %b dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{the hand-written split has 2 stages, but rtx-split-stages was asked for 3}}
func.func @hand_count() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x : tensor<4x8xf32>
  %b = rtx.relu %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %b dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
