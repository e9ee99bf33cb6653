// One rtx-optimizer AdamW step equals the closed form of torch.optim.AdamW
// (computed independently in NumPy), with weight decay, over two steps.
// loss = sum(w * x), so the gradient of w is x.
//
// RUN: rm -rf %t && mkdir -p %t/out %t/params
// RUN: %python %S/Inputs/adamw_reference.py make %t
// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.1 beta1=0.8 beta2=0.9 eps=0.001 weight-decay=0.2' -o %t/train.mlir
// RUN: rtx-run %t/train.mlir --inputs %t --params %t/params --steps 2 --out %t/out > /dev/null
// RUN: %python %S/Inputs/adamw_reference.py check %t | FileCheck %s
// CHECK: adamw matches the closed form

func.func @f(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = rtx.param "w" uniform(-1.0, 1.0) seed 3 : tensor<2x3xf32>
  %p = rtx.mul %w, %x : tensor<2x3xf32>
  %l = rtx.reduce sum %p dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
