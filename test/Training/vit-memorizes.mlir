// The ViT block example (patches embedded by a linear layer, a class token,
// bidirectional attention, GELU MLP, layernorm, a classifier), trained with
// AdamW, memorises a fixed batch of random images within 30 steps in rtx-run.
//
// RUN: rtx-opt %rtx_src_root/examples/vit-block.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o %t.mlir
// RUN: rtx-run %t.mlir --random --steps 30 | %python %S/Inputs/check_loss.py --below 0.05 --fraction 0.05 | FileCheck %s
// CHECK: steps=30 {{.*}} CONVERGED
