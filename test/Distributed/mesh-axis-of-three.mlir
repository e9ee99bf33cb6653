// A mesh axis of size 3: a GPT-2 of width 48 with 3 heads and batch 3 on
// dp:3, tp:3 and dp:3 x tp:2 (the c_attn and MLP projections split 3 ways).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=1, batch=3, width=48, heads=3)).text())" > %t/gpt2.mlir
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 3 8 37
// RUN: %S/compare-meshes.sh %t/gpt2.mlir "kind=sgd lr=0.1" 3 %t dp:3 tp:3 dp:3,tp:2 | FileCheck %s
// CHECK-COUNT-3: {{[1-9][0-9]*}} results pass, 0 fail
