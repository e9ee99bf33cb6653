// RUN: rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=lion' -verify-diagnostics

// expected-error @below {{rtx-optimizer: unknown kind 'lion'; expected sgd or adamw}}
module {
  func.func @f() -> tensor<f32> {
    %w = rtx.param "w" ones : tensor<3xf32>
    %l = rtx.reduce sum %w dims [0] : tensor<3xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// The learning-rate schedule's options, checked by name.
// RUN: not rtx-opt %s -rtx-autodiff '-rtx-optimizer=kind=sgd warmup-steps=10' 2>&1 | FileCheck %s --check-prefix=SGD
// SGD: rtx-optimizer: warmup-steps, decay-steps and min-lr schedule AdamW's learning rate; kind=sgd has no step count to schedule by
// RUN: not rtx-opt %s -rtx-autodiff '-rtx-optimizer=warmup-steps=-1' 2>&1 | FileCheck %s --check-prefix=WARMUP
// WARMUP: rtx-optimizer: warmup-steps=-1 must be >= 0
// RUN: not rtx-opt %s -rtx-autodiff '-rtx-optimizer=warmup-steps=10 decay-steps=5' 2>&1 | FileCheck %s --check-prefix=DECAY
// DECAY: rtx-optimizer: decay-steps=5 must be 0 (no decay) or greater than warmup-steps=10
// RUN: not rtx-opt %s -rtx-autodiff '-rtx-optimizer=lr=0.001 decay-steps=5 min-lr=0.01' 2>&1 | FileCheck %s --check-prefix=MINLR
// MINLR: rtx-optimizer: min-lr=0.01 must be in [0, lr=0.001]
// RUN: not rtx-opt %s -rtx-autodiff '-rtx-optimizer=warmup-steps=5 min-lr=0.0001' 2>&1 | FileCheck %s --check-prefix=NODECAY
// NODECAY: rtx-optimizer: min-lr=0.0001 needs decay-steps (the step it is reached at)
