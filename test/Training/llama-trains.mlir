// The Llama-style block (RMSNorm, rotary embedding, grouped key/value heads,
// SiLU-gated MLP) trains: its stand-in loss falls by 90% in 20 AdamW steps.
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o %t.mlir
// RUN: rtx-run %t.mlir --random --steps 20 | %python %S/Inputs/check_loss.py --below 0.1 --fraction 0.1 | FileCheck %s
// CHECK: steps=20 {{.*}} CONVERGED
