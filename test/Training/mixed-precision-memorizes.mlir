// Mixed precision: a bf16 MLP (bf16 parameters and activations) trained by
// rtx-optimizer with mixed-precision=true (f32 master weights as the
// parameter arguments, gradients accumulated and applied in f32) memorises a
// fixed batch in 30 AdamW steps in rtx-run.
//
// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=adamw mixed-precision=true lr=0.01' -o %t.mlir
// RUN: FileCheck %s --check-prefix=MASTER < %t.mlir
// MASTER: rtx.param = "fc1.weight"
// MASTER-SAME: tensor<32x16xf32>
// RUN: rtx-run %t.mlir --random --steps 30 | %python %S/Inputs/check_loss.py --below 0.05 --fraction 0.05 | FileCheck %s
// CHECK: steps=30 {{.*}} CONVERGED

func.func @mlp() -> tensor<f32> {
  %x = rtx.input "x" : tensor<8x16xbf16>
  %labels = rtx.input "labels" : tensor<8xi32>
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.1) : tensor<32x16xbf16>
  %h = rtx.linear %x, %w1 : tensor<8x16xbf16>, tensor<32x16xbf16> -> tensor<8x32xbf16>
  %a = rtx.gelu %h : tensor<8x32xbf16>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.1) : tensor<10x32xbf16>
  %z = rtx.linear %a, %w2 : tensor<8x32xbf16>, tensor<10x32xbf16> -> tensor<8x10xbf16>
  %z32 = rtx.convert %z : tensor<8x10xbf16> -> tensor<8x10xf32>
  %loss = rtx.cross_entropy %z32, %labels : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
