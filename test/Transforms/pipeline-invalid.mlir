// RUN: rtx-opt %s -split-input-file '-rtx-pipeline=micro-batches=2' -verify-diagnostics
// RUN: not rtx-opt %s -split-input-file '-rtx-pipeline=micro-batches=2 schedule=zigzag' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not rtx-opt %s -split-input-file '-rtx-pipeline=micro-batches=1' 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not rtx-opt %s -split-input-file '-rtx-pipeline=micro-batches=1 schedule-file=%S/Inputs/missing-send-schedule.txt' 2>&1 | FileCheck %s --check-prefix=FILE
// UNKNOWN: error: rtx-pipeline: unknown schedule 'zigzag' (gpipe, 1f1b, interleaved, zb-h1)
// FEW: error: 1f1b needs at least as many micro-batches as pipeline ranks (its warm-up fills every stage), got 1 micro-batches for 2 ranks; use more micro-batches or gpipe
// FILE: error: rank 1, action 0: '1RECV_F0': no rank sends it

rtx.mesh @mesh_pp2 ["pp"=2]
func.func @step() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x {rtx.stage = 0 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %a dims [0, 1] {rtx.stage = 1 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{rtx-pipeline: no op has an 'rtx.stage'; run rtx-split-stages before rtx-autodiff (in rtx-distribute: a mesh with a pp axis)}}
module {
  rtx.mesh @mesh_dp2 ["dp"=2]
  func.func @no_stages() -> tensor<f32> {
    %x = rtx.input "x" : tensor<4x8xf32>
    %l = rtx.reduce sum %x dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// expected-error @+1 {{rtx-pipeline: mesh @mesh_dp2 has no axis "pp"}}
rtx.mesh @mesh_dp2 ["dp"=2]
func.func @no_axis() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x {rtx.stage = 0 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %a dims [0, 1] {rtx.stage = 1 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

rtx.mesh @mesh_pp2 ["pp"=2]
// expected-error @+1 {{the function has 3 pipeline stages, but axis "pp" of size 2 with virtual=1 runs 2}}
func.func @three_stages() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x {rtx.stage = 0 : i64} : tensor<4x8xf32>
  %b = rtx.relu %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %b dims [0, 1] {rtx.stage = 2 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

rtx.mesh @mesh_pp2 ["pp"=2]
func.func @mixed() -> tensor<4x8xf32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %a = rtx.relu %x {rtx.stage = 0 : i64} : tensor<4x8xf32>
  %b = rtx.tanh %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  // expected-error @+1 {{'rtx.maximum' combines tensors of pipeline stages 0 1 within a micro-batch; only linear ops on gradients may, after the micro-batches (gradient clipping with pipelines is not supported yet)}}
  %c = rtx.maximum %a, %b : tensor<4x8xf32>
  %d = rtx.relu %c {rtx.stage = 1 : i64} : tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_pp2 ["pp"=2]
func.func @backwards() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  // expected-error @+1 {{'rtx.relu' of stage 1 is used by stage 0: a forward tensor can only go to later stages}}
  %a = rtx.relu %x {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %a dims [0, 1] {rtx.stage = 0 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

rtx.mesh @mesh_pp2 ["pp"=2]
func.func @scalar_input() -> tensor<f32> {
  // expected-error @+1 {{input "s" is a scalar: there is no batch dimension to split into micro-batches}}
  %s = rtx.input "s" : tensor<f32>
  %a = rtx.exp %s {rtx.stage = 0 : i64} : tensor<f32>
  %l = rtx.exp %a {rtx.stage = 1 : i64} : tensor<f32>
  return %l : tensor<f32>
}
