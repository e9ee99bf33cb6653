// rtx-translate --emit=description writes what describeProgram decodes as
// JSON, so that the Python driver reads it instead of parsing printed IR:
// each step result in the order rtx-run writes resultN.npy, with its type,
// state key and gradient's parameter; each argument with its role.
//
// RUN: rtx-opt %s -rtx-autodiff | rtx-translate --emit=description - | FileCheck %s --check-prefix=GRADS
// GRADS:      "function": "mlp",
// GRADS:      "results": [
// GRADS-NEXT:   {
// GRADS-NEXT:     "grad_of": null,
// GRADS-NEXT:     "index": 0,
// GRADS:          "type": "tensor<f32>"
// GRADS:        {
// GRADS-NEXT:     "grad_of": "w",
// GRADS-NEXT:     "index": 1,
// GRADS:          "state": null,
// GRADS-NEXT:     "type": "tensor<2x3xf32>"
//
// After rtx-optimizer the parameter is an argument, and the step returns its
// next value under its state key.
// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=sgd lr=0.5' | rtx-translate --emit=description - | FileCheck %s --check-prefix=STEP
// STEP:      "results": [
// STEP:        "index": 1,
// STEP:        "state": "param:w",
// STEP-NEXT:   "type": "tensor<2x3xf32>"
// STEP:      "arguments": [
// STEP-NEXT:   {
// STEP-NEXT:     "arg_number": 0,
// STEP-NEXT:     "init": "#rtx.init<normal(0.000000e+00, 1.000000e+00)>",
// STEP-NEXT:     "name": "w",
// STEP-NEXT:     "offload": null,
// STEP-NEXT:     "role": "parameter",
// STEP-NEXT:     "seed": 5,
// STEP:          "role": "data",
// STEP:      "loss_result": 0,
//
// A description builds nothing: a build script is refused.
// RUN: not rtx-translate --emit=description %s --build-script %t.sh 2>&1 | FileCheck %s --check-prefix=SCRIPT
// SCRIPT: rtx-translate: error: --build-script builds a program: --emit=description writes none

func.func @mlp(%x: tensor<4x3xf32>) -> tensor<f32> {
  %w = rtx.param "w" normal(0.0, 1.0) seed 5 : tensor<2x3xf32>
  %y = rtx.linear %x, %w : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
