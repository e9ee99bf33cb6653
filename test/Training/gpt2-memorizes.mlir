// The 2-layer GPT-2 example (vocabulary 37), trained with AdamW on one fixed
// next-token batch, memorises it within 50 steps in rtx-run.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 2 8 37
// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o %t/train.mlir
// RUN: rtx-run %t/train.mlir --inputs %t --steps 50 | %python %S/Inputs/check_loss.py --below 0.05 --fraction 0.02 | FileCheck %s
// CHECK: steps=50 {{.*}} CONVERGED
