// Every kernel that rtx-run executes, checked end to end against an
// independent NumPy implementation (Inputs/numpy_reference.py) on odd shapes:
// the script writes random inputs, rtx-run computes, the script compares each
// result with fp32 tolerance (relative norm <= 1e-5).
//
// RUN: rm -rf %t && mkdir -p %t/out
// RUN: %python %S/Inputs/numpy_reference.py make %t
// RUN: rtx-run %s --inputs %t --out %t/out > %t/summary.txt
// RUN: %python %S/Inputs/numpy_reference.py check %t | FileCheck %s
// CHECK: checked 30 results against numpy: all within tolerance

func.func @main() -> (tensor<7x5xf32>, tensor<2x4x7x7xf32>, tensor<7x5xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<3x7x13xf32>, tensor<f32>,
    tensor<13x7xf32>, tensor<3x5xf32>, tensor<7x16xf32>, tensor<2x7x13xf32>,
    tensor<7xf32>, tensor<13xf32>, tensor<7x1xf32>) {
  %a = rtx.input "a" : tensor<7x13xf32>
  %b = rtx.input "b" : tensor<13x5xf32>
  %c = rtx.input "c" : tensor<7x13xf32>
  %w = rtx.input "w" : tensor<5x13xf32>
  %bias = rtx.input "bias" : tensor<5xf32>
  %g = rtx.input "g" : tensor<13xf32>
  %q = rtx.input "q" : tensor<2x4x7x8xf32>
  %k = rtx.input "k" : tensor<2x2x7x8xf32>
  %v = rtx.input "v" : tensor<2x2x7x8xf32>
  %table = rtx.input "table" : tensor<11x13xf32>
  %ids = rtx.input "ids" : tensor<3x7xi32>
  %labels = rtx.input "labels" : tensor<7xi32>
  %pos = rtx.input "pos" : tensor<7x13xf32>

  %r0 = rtx.matmul %a, %b : tensor<7x13xf32>, tensor<13x5xf32> -> tensor<7x5xf32>
  %r1 = rtx.batch_matmul %q, %q transpose_rhs
      : tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32> -> tensor<2x4x7x7xf32>
  %r2 = rtx.linear %a, %w, %bias : tensor<7x13xf32>, tensor<5x13xf32>, tensor<5xf32> -> tensor<7x5xf32>
  %r3 = rtx.add %a, %c : tensor<7x13xf32>
  %r4 = rtx.sub %a, %c : tensor<7x13xf32>
  %r5 = rtx.mul %a, %c : tensor<7x13xf32>
  %r6 = rtx.div %a, %pos : tensor<7x13xf32>
  %r7 = rtx.maximum %a, %c : tensor<7x13xf32>
  %r8 = rtx.minimum %a, %c : tensor<7x13xf32>
  %r9 = rtx.exp %a : tensor<7x13xf32>
  %r10 = rtx.tanh %a : tensor<7x13xf32>
  %r11 = rtx.sigmoid %a : tensor<7x13xf32>
  %r12 = rtx.silu %a : tensor<7x13xf32>
  %r13 = rtx.gelu %a : tensor<7x13xf32>
  %r14 = rtx.gelu %a approximate : tensor<7x13xf32>
  %r15 = rtx.rsqrt %pos : tensor<7x13xf32>
  %gb = rtx.broadcast %g dims [1] : tensor<13xf32> -> tensor<7x13xf32>
  %r16 = rtx.layernorm %a, %g, %g eps 1.0e-05 : tensor<7x13xf32>, tensor<13xf32>, tensor<13xf32>
  %r17 = rtx.rmsnorm %a, %g eps 1.0e-06 : tensor<7x13xf32>, tensor<13xf32>
  %r18 = rtx.softmax %a dim 1 : tensor<7x13xf32>
  %r19 = rtx.rope %q theta 1.0e+04 : tensor<2x4x7x8xf32>
  %r20 = rtx.attention %q, %k, %v causal
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32> -> tensor<2x4x7x8xf32>
  %r21 = rtx.embedding %table, %ids : tensor<11x13xf32>, tensor<3x7xi32> -> tensor<3x7x13xf32>
  %r22 = rtx.cross_entropy %a, %labels ignore_index 3 : tensor<7x13xf32>, tensor<7xi32> -> tensor<f32>
  %r23 = rtx.transpose %a [1, 0] : tensor<7x13xf32> -> tensor<13x7xf32>
  %r24 = rtx.slice %a [2:5, 4:9] : tensor<7x13xf32> -> tensor<3x5xf32>
  %s0, %s1 = rtx.split %a dim 1 : tensor<7x13xf32> -> tensor<7x5xf32>, tensor<7x8xf32>
  %s2 = rtx.exp %s0 : tensor<7x5xf32>
  %r25 = rtx.concat %s1, %s2, %s1 dim 1 : tensor<7x8xf32>, tensor<7x5xf32>, tensor<7x8xf32> -> tensor<7x21xf32>
  %r25s = rtx.slice %r25 [0:7, 2:18] : tensor<7x21xf32> -> tensor<7x16xf32>
  %r26 = rtx.broadcast %gb dims [1, 2] : tensor<7x13xf32> -> tensor<2x7x13xf32>
  %r27 = rtx.reduce sum %a dims [1] : tensor<7x13xf32> -> tensor<7xf32>
  %r28 = rtx.reduce mean %a dims [0] : tensor<7x13xf32> -> tensor<13xf32>
  %r29 = rtx.reduce max %a dims [1] keepdim : tensor<7x13xf32> -> tensor<7x1xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12,
      %r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22, %r23, %r24,
      %r25s, %r26, %r27, %r28, %r29
      : tensor<7x5xf32>, tensor<2x4x7x7xf32>, tensor<7x5xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<7x13xf32>, tensor<7x13xf32>, tensor<7x13xf32>,
    tensor<2x4x7x8xf32>, tensor<2x4x7x8xf32>, tensor<3x7x13xf32>, tensor<f32>,
    tensor<13x7xf32>, tensor<3x5xf32>, tensor<7x16xf32>, tensor<2x7x13xf32>,
    tensor<7xf32>, tensor<13xf32>, tensor<7x1xf32>
}
