// RUN: rtx-opt %s -split-input-file '-rtx-split-stages=stages=2 report=true' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefixes=CHECK,REPORT

// Two layers: the cut lies at a place where one computed tensor is live,
// the one that balances the cost best (FLOPs + 4 per byte); the parameter, the input and the constant get no
// stage (each stage that uses them keeps a copy).
// REPORT: split-stages.mlir:[[@LINE+14]]:8: remark: stage 0: 2 ops, 544 FLOPs, 46.4% of the cost, 1 parameters (256 bytes), 256 bytes of activations
// REPORT: split-stages.mlir:[[@LINE+16]]:8: remark: stage 1: 3 ops, 576 FLOPs, 53.6% of the cost, 1 parameters (256 bytes), 260 bytes of activations
// CHECK-LABEL: func.func @two_layers
// CHECK:      rtx.input "x" :
// CHECK-NEXT: rtx.param "w1"
// CHECK-NEXT: rtx.matmul {{.*}}rtx.stage = 0
// CHECK-NEXT: rtx.relu {{.*}}rtx.stage = 0
// CHECK-NEXT: rtx.param "w2"
// CHECK-NEXT: rtx.matmul {{.*}}rtx.stage = 1
// CHECK-NEXT: rtx.relu {{.*}}rtx.stage = 1
// CHECK-NEXT: rtx.reduce {{.*}}rtx.stage = 1
func.func @two_layers() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %w1 = rtx.param "w1" normal(0.0, 0.1) : tensor<8x8xf32>
  %a = rtx.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = rtx.relu %a : tensor<4x8xf32>
  %w2 = rtx.param "w2" normal(0.0, 0.1) : tensor<8x8xf32>
  %c = rtx.matmul %b, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %d = rtx.relu %c : tensor<4x8xf32>
  %l = rtx.reduce sum %d dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A split written by hand is kept; ops without a stage take the one of the
// op before them.
// CHECK-LABEL: func.func @by_hand
// CHECK: rtx.matmul {{.*}}rtx.stage = 0
// CHECK: rtx.relu {{.*}}rtx.stage = 1
// CHECK: rtx.reduce {{.*}}rtx.stage = 1
func.func @by_hand() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %w = rtx.param "w" normal(0.0, 0.1) : tensor<8x8xf32>
  %a = rtx.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = rtx.relu %a {rtx.stage = 1 : i64} : tensor<4x8xf32>
  %l = rtx.reduce sum %b dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

