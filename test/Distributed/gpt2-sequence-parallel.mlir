// Sequence (context) parallelism on its own sp axis, DeepSpeed-Ulysses
// style: activations split along the sequence, attention on whole sequences
// for a subset of heads through all-to-alls. A 2-layer GPT-2 with 4 heads,
// on sp alone and on meshes of up to three axes (dp x tp x sp): 3 steps equal
// the single-device train step.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4, heads=4)).text())" > %t/gpt2.mlir
// RUN: %python %rtx_src_root/examples/make_lm_batch.py %t 4 8 37
// RUN: %S/compare-meshes.sh %t/gpt2.mlir "kind=sgd lr=0.1" 3 %t \
// RUN:   sp:2 sp:4 dp:2,sp:2 tp:2,sp:2 sp:2,dp:2,tp:2 | FileCheck %s
// CHECK-COUNT-5: {{[1-9][0-9]*}} results pass, 0 fail
//
// Around each attention of the forward pass, q, k and v go from
// sequence-split to heads-split by one all-to-all each.
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=sp:2 optimizer=sgd' -o %t/sp.mlir
// RUN: FileCheck %s --check-prefix=ULYSSES < %t/sp.mlir
// ULYSSES-COUNT-3: rtx.all_to_all %{{.*}} on @mesh_sp2 ["sp"] split 1 concat 2 {{.*}} : tensor<4x4x4x8xf32> -> tensor<4x2x8x8xf32>
// ULYSSES-NEXT: rtx.attention {{.*}} : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32> -> tensor<4x2x8x8xf32>
