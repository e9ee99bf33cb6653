// Sequence (context) parallelism on its own sp axis, DeepSpeed-Ulysses
// style: activations split along the sequence, attention on whole sequences
// for a subset of heads through all-to-alls. A 2-layer GPT-2 with 4 heads
// (c_attn's features in Megatron's per-head order) and vocabulary 44 (split
// over tp where there is one), with AdamW (eps 1e-5 and tolerance 1e-4, see
// gpt2-meshes.mlir), on every mesh with sp in {2, 4}, dp, tp in {1, 2, 4}
// and at most 8 ranks: 3 steps equal the single-device train step. (With
// tp x sp = 8 > 4 heads, attention keeps whole heads and the sequence is
// gathered instead.)
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4, heads=4, vocab=44, qkv_layout='heads')).text())" > %t/gpt2.mlir
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 4 8 44
// RUN: %S/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 tolerance=1e-4" 3 %t \
// RUN:   sp:2 sp:4 dp:2,sp:2 dp:2,sp:4 dp:4,sp:2 tp:2,sp:2 tp:2,sp:4 tp:4,sp:2 sp:2,dp:2,tp:2 | FileCheck %s
// CHECK-COUNT-9: {{[1-9][0-9]*}} results pass, 0 fail
//
// Around each attention of the forward pass, q, k and v go from
// sequence-split to heads-split by one all-to-all each.
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=sp:2 optimizer=sgd' -o %t/sp.mlir
// RUN: FileCheck %s --check-prefix=ULYSSES < %t/sp.mlir
// ULYSSES-COUNT-3: rtx.all_to_all %{{.*}} on @mesh_sp2 ["sp"] split 1 concat 2 {{.*}} : tensor<4x4x4x8xf32> -> tensor<4x2x8x8xf32>
// ULYSSES-NEXT: rtx.attention {{.*}} : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32> -> tensor<4x2x8x8xf32>
