// Offloaded sharded training (rtx-shard-state{offload=cpu|nvme}, the
// ZeRO-Offload / ZeRO-Infinity layout) trains as one device: 3 AdamW steps
// of the 4-layer GPT-2 (wte tied) and the 4-block Llama stack equal the
// single-device train step (1e-4), with the global gradient norm clipped,
// for every ZeRO stage with the optimizer state (and at stage 3 the
// parameter shards) in host memory or in files, on dp and dp x tp meshes,
// HSDP and pipelines. rtx-run reads the final state back from the tier,
// so a lost or stale write fails the comparison.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=8)).text())" > %t/gpt2.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=4)).text())" > %t/gpt2-micro.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(layers=4, batch=8), name='llama').text())" > %t/llama.mlir
//
// RUN: for s in 1 2 3; do for o in cpu nvme; do %S/../Distributed/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=$s offload=$o" 3 --random dp:2 dp:4,tp:2; done; done 2>&1 | FileCheck %s --check-prefix=GPT2
// GPT2-COUNT-12: 158 results pass, 0 fail
// GPT2-NOT: fail
//
// RUN: for o in cpu nvme; do %S/../Distributed/compare-meshes.sh %t/llama.mlir "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=3 offload=$o" 3 --random dp:4 dp:2,tp:2; done 2>&1 | FileCheck %s --check-prefix=LLAMA
// LLAMA-COUNT-4: results pass, 0 fail
// LLAMA-NOT: fail
//
// HSDP (shards within dp, replicas across dp_replicate) with the shards in
// files:
// RUN: %S/../Distributed/compare-meshes.sh %t/gpt2.mlir "kind=adamw lr=0.01 eps=1e-5 clip-norm=0.05 tolerance=1e-4 shard-state=3 offload=nvme" 3 --random dp_replicate:2,dp:2 2>&1 | FileCheck %s --check-prefix=HSDP
// HSDP: mesh dp_replicate:2,dp:2 ranks 4: 158 results pass, 0 fail
//
// Pipelines: each stage's state offloaded on its own ranks.
// RUN: %S/../Pipeline/Inputs/compare-pipelines.sh %t/gpt2-micro.mlir %t/gpt2.mlir 3 --random \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b;shard-state=3;offload=nvme" \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1;shard-state=1;offload=cpu" 2>&1 | FileCheck %s --check-prefix=PP
// PP-COUNT-2: 2 stage functions, 6 sends, 158 results pass, 0 fail
//
// The programs really offload: at stage 3 the 15 flat buffers of GPT-2 (5
// units, root and 4 blocks: parameters and both moments) are references
// (marked on the argument and the result),
// read 25 times (each unit's parameters for the forward gather, the
// backward gather and the update, and both moments) and written back once
// each; at stage 1 the parameters stay in memory and the 10 moments go.
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:2 shard-state=3 offload=nvme' -o %t/z3.mlir
// RUN: grep -o 'rtx.offload = "nvme"' %t/z3.mlir | wc -l | FileCheck %s --check-prefix=MARKED3
// MARKED3: {{^}}30{{$}}
// RUN: grep -c rtx.offload_fetch_start %t/z3.mlir | FileCheck %s --check-prefix=FETCH3
// FETCH3: {{^}}25{{$}}
// RUN: grep -c rtx.offload_store %t/z3.mlir | FileCheck %s --check-prefix=STORE3
// STORE3: {{^}}15{{$}}
// RUN: rtx-opt %t/gpt2.mlir '-rtx-distribute=mesh=dp:2 shard-state=1 offload=cpu' -o %t/z1.mlir
// RUN: grep -c rtx.offload_store %t/z1.mlir | FileCheck %s --check-prefix=STORE1
// STORE1: {{^}}10{{$}}
