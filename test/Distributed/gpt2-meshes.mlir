// The 2-layer GPT-2 example (vocabulary 37, not a power of two), batch 4, on
// every mesh with dp, tp in {1, 2, 4} and at most 8 ranks, on a next-token
// batch: 3 steps equal the single-device train step.
//
// SGD rather than AdamW here: the gradient of the attention's key bias is
// zero up to rounding (softmax ignores a shift that is the same for every
// key), and AdamW divides such rounding noise by eps, so the two programs'
// different (correct) summation orders show up as 1e-5 differences in those
// bias elements. mlp-meshes.mlir and llama-meshes.mlir check AdamW.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4)).text())" > %t/gpt2.mlir
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 4 8 37
// RUN: %S/compare-meshes.sh %t/gpt2.mlir "kind=sgd lr=0.1" 3 %t \
// RUN:   dp:2 tp:2 dp:2,tp:2 dp:4 tp:4 dp:4,tp:2 dp:2,tp:4 | FileCheck %s
// CHECK-COUNT-7: {{[1-9][0-9]*}} results pass, 0 fail
