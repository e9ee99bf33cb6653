// Megatron sequence parallelism on tp (sequence-parallel=true): the Llama
// block and a 4-head GPT-2 (c_attn in Megatron's per-head order) with
// vocabulary 44 (split over tp: the embedding's partial sums are
// reduce-scattered along the sequence) train identically to one device with
// AdamW (for GPT-2, eps 1e-5 and tolerance 1e-4: see gpt2-meshes.mlir).
//
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/llama-block.mlir "kind=adamw lr=0.01 sequence-parallel=true" 3 --random \
// RUN:   tp:2 dp:2,tp:2 tp:4 dp:2,tp:4 dp:4,tp:2 | FileCheck %s --check-prefix=LLAMA
// LLAMA-COUNT-5: {{[1-9][0-9]*}} results pass, 0 fail
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4, heads=4, vocab=44, qkv_layout='heads')).text())" > %t/gpt2.mlir
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 4 8 44
// RUN: %S/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 tolerance=1e-4 sequence-parallel=true" 3 %t \
// RUN:   tp:2 tp:4 dp:2,tp:2 dp:2,tp:4 dp:4,tp:2 | FileCheck %s --check-prefix=GPT2
// GPT2-COUNT-5: {{[1-9][0-9]*}} results pass, 0 fail
