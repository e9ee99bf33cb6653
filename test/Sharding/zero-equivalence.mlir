// Every ZeRO stage (rtx-shard-state through rtx-distribute's shard-state)
// trains as plain data parallelism: 3 AdamW steps of the 4-layer GPT-2
// example (wte tied) and of the 4-block Llama stack equal the single-device
// train step, on 2, 4 and 8 ranks and composed with tp=2, with the global
// gradient norm clipped (clip-norm=0.05 scales every step's gradients, so a
// norm taken over one shard instead of all would not pass). The counts
// after each line say the program really is sharded: flat buffers carry
// rtx.flat, the gradients are reduce-scattered (stages 2 and 3), and the
// parameters are gathered before use (stage 3).
//
// Tolerance 1e-4 (design.md, after optimizer steps); eps=1e-5 keeps Adam
// from amplifying the rounding noise of gradients that are zero in exact
// arithmetic (the key bias of attention).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=8)).text())" > %t/gpt2.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(layers=4, batch=8), name='llama').text())" > %t/llama.mlir
// RUN: for s in 1 2 3; do %S/../Distributed/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=$s" 3 --random dp:2 dp:4 dp:8 dp:2,tp:2 dp:4,tp:2; done 2>&1 | FileCheck %s --check-prefix=GPT2
// GPT2-COUNT-15: results pass, 0 fail
// GPT2-NOT: fail
//
// RUN: for s in 1 2 3; do %S/../Distributed/compare-meshes.sh %t/llama.mlir "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=$s" 3 --random dp:2 dp:4 dp:8 dp:2,tp:2; done 2>&1 | FileCheck %s --check-prefix=LLAMA
// LLAMA-COUNT-12: results pass, 0 fail
//
// reduce-dtype=bf16: the gradients are reduce-scattered in bf16 (8 bits of
// mantissa, 2^-8 = 0.4% per value): the step stays within 5e-2 of the fp32
// one after 3 steps (the moments of near-zero gradients differ most), and
// really differs from it (at 1e-5 most results fail).
// RUN: %S/../Distributed/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 tolerance=5e-2 shard-state=2 reduce-dtype=bf16" 3 --random dp:2 dp:4 2>&1 | FileCheck %s --check-prefix=BF16
// BF16-COUNT-2: 158 results pass, 0 fail
// RUN: %S/../Distributed/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 tolerance=1e-5 shard-state=2 reduce-dtype=bf16" 3 --random dp:2 2>&1 | FileCheck %s --check-prefix=BF16-DIFFERS
// BF16-DIFFERS: {{[0-9]+}} results pass, {{[1-9][0-9]+}} fail
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:2 shard-state=2 reduce-dtype=bf16' 2>/dev/null | FileCheck %s --check-prefix=BF16-IR
// BF16-IR: rtx.convert {{.*}} -> tensor<{{[0-9]+}}xbf16>
// BF16-IR-NEXT: rtx.reduce_scatter {{.*}} : tensor<{{[0-9]+}}xbf16> -> tensor<{{[0-9]+}}xbf16>
// BF16-IR-NEXT: rtx.convert {{.*}} -> tensor<{{[0-9]+}}xf32>
//
// Hybrid sharding (HSDP): shard within dp, replicate across dp_replicate (a 2-D data mesh),
// also with tp=2 (8 ranks); the shards' gradients are all-reduced across
// the replicas in one collective.
// RUN: for m in %t/gpt2.mlir %t/llama.mlir; do %S/../Distributed/compare-meshes.sh $m "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=3" 3 --random dp_replicate:2,dp:2 dp_replicate:2,dp:2,tp:2; done 2>&1 | FileCheck %s --check-prefix=HSDP
// HSDP-COUNT-4: results pass, 0 fail
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp_replicate:2,dp:2 shard-state=3' | FileCheck %s --check-prefix=HSDP-IR
// HSDP-IR-DAG: rtx.reduce_scatter {{.*}} ["dp"] sum
// HSDP-IR-DAG: rtx.all_reduce {{.*}} ["dp_replicate"] sum
//
// Sharded for real: stage 1 slices the state, stage 2 reduce-scatters,
// stage 3 gathers parameters twice per unit (forward and backward) and
// prefetches all but the first.
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:4 shard-state=1' -o %t/z1.mlir
// RUN: grep -c 'rtx.mesh_slice' %t/z1.mlir | FileCheck %s --check-prefix=SLICES
// SLICES: {{[1-9][0-9]*}}
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:4 shard-state=2' | FileCheck %s --check-prefix=Z2
// Z2: rtx.reduce_scatter
// Z2-NOT: rtx.all_gather_start
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:4 shard-state=3' -o %t/z3.mlir
// RUN: grep -c 'rtx.all_gather_start' %t/z3.mlir | FileCheck %s --check-prefix=PREFETCH
// PREFETCH: {{[1-9][0-9]*}}
// No gradient is all-reduced over dp any more (only the loss, a scalar):
// RUN: not grep -E 'rtx.all_reduce %.* \["dp"\] sum : tensor<[0-9]+xf32>' %t/z3.mlir
