// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-recompute=policy=full' | FileCheck %s --check-prefix=FULL
// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-recompute=policy=selective' | FileCheck %s --check-prefix=SELECTIVE
// RUN: rtx-opt %s -split-input-file -rtx-autodiff '-rtx-recompute=policy=none' | FileCheck %s --check-prefix=NONE
// RUN: not rtx-opt %s -split-input-file -rtx-autodiff '-rtx-recompute=policy=some' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: rtx-recompute: unknown policy 'some'; expected none, full or selective
// Without gradients there is nothing to recompute for: an error.
// RUN: not rtx-opt %s '-rtx-recompute=policy=full' 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: rtx-recompute runs after rtx-autodiff: the function has no gradients to recompute for

// An input scaled by a weight, then two residual blocks h + tanh(h w).
// Full keeps only the block inputs (%h0 and %h1, each the one tensor live
// between blocks): the backward pass recomputes each block's matmul and
// tanh from them before its own gradients. Selective keeps the matmuls and
// recomputes the elementwise ops only.
// FULL-LABEL: func.func @two_blocks
// FULL:      %[[H0:.*]] = rtx.mul
// FULL:      %[[A:.*]] = rtx.matmul %[[H0]], %[[W1:[^ ]*]] :
// FULL-NEXT: %[[B:.*]] = rtx.tanh %[[A]]
// FULL-NEXT: %[[H1:.*]] = rtx.add %[[H0]], %[[B]]
// FULL:      %[[C:.*]] = rtx.matmul %[[H1]], %[[W2:[^ ]*]] :
// FULL:      rtx.reduce mean
// FULL:      %[[C2:.*]] = rtx.matmul %[[H1]], %[[W2]] :
// FULL-NEXT: rtx.unary_grad tanh %[[C2]]
// FULL:      %[[A2:.*]] = rtx.matmul %[[H0]], %[[W1]] :
// FULL-NEXT: rtx.unary_grad tanh %[[A2]]
//
// SELECTIVE-LABEL: func.func @two_blocks
// SELECTIVE:      %[[A:.*]] = rtx.matmul
// SELECTIVE:      %[[C:.*]] = rtx.matmul
// SELECTIVE:      rtx.reduce mean
// SELECTIVE:      rtx.tanh %[[C]]
// SELECTIVE:      rtx.unary_grad tanh %[[C]]
// SELECTIVE:      rtx.unary_grad tanh %[[A]]
//
// NONE-LABEL: func.func @two_blocks
// NONE-COUNT-2: rtx.tanh
// NONE-NOT:     rtx.tanh
func.func @two_blocks() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %s = rtx.param "scale" ones : tensor<4x8xf32>
  %h0 = rtx.mul %x, %s : tensor<4x8xf32>
  %w1 = rtx.param "w1" normal(0.0, 0.1) : tensor<8x8xf32>
  %a = rtx.matmul %h0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = rtx.tanh %a : tensor<4x8xf32>
  %h1 = rtx.add %h0, %b : tensor<4x8xf32>
  %w2 = rtx.param "w2" normal(0.0, 0.1) : tensor<8x8xf32>
  %c = rtx.matmul %h1, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %d = rtx.tanh %c : tensor<4x8xf32>
  %h2 = rtx.add %h1, %d : tensor<4x8xf32>
  %e = rtx.mul %h2, %h2 : tensor<4x8xf32>
  %l = rtx.reduce mean %e dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

