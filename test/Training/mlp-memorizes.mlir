// The MLP example, made a training step by rtx-autodiff + rtx-optimizer
// (AdamW), memorises a fixed batch of 16 random samples within 50 steps in
// rtx-run.
//
// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o %t.mlir
// RUN: rtx-run %t.mlir --random --steps 50 | %python %S/Inputs/check_loss.py --below 0.01 --fraction 0.01 | FileCheck %s
// CHECK: steps=50 {{.*}} CONVERGED
