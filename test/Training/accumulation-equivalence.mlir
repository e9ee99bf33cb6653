// Gradient accumulation: 4 micro-batches of 2 give the same training step
// (loss, updated parameters, AdamW moments) as one batch of 8, on the same
// inputs and initial parameters; and 3 steps in a row stay equal.
//
// RUN: rtx-opt %S/Inputs/mlp-batch8.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.05' -o %t.ref.mlir
// RUN: rtx-opt %S/Inputs/mlp-batch2.mlir -rtx-autodiff '-rtx-accumulate-gradients=micro-batches=4' '-rtx-optimizer=kind=adamw lr=0.05' -o %t.acc.mlir
// RUN: rtx-run --compare %t.ref.mlir %t.acc.mlir --random --tolerance 1e-5 | FileCheck %s
// RUN: rtx-run --compare %t.ref.mlir %t.acc.mlir --random --steps 3 --tolerance 1e-4 | FileCheck %s
// CHECK-COUNT-11: PASS
// CHECK-NOT: FAIL
