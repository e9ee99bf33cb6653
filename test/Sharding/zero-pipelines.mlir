// rtx-shard-state composed with pipelines: each pipeline coordinate's step
// (rtx-pipeline's @NAME_ppK) shards its own stage's state over dp; the
// GPT-2 example's wte, tied between the first and the last stage, is a
// member of a flat buffer on both, and rtx-run checks the two copies agree.
// 3 AdamW steps equal the single-device train step at the whole batch (the
// model is written for one micro-batch; test/Pipeline/Inputs).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=4)).text())" > %t/gpt2-micro.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=8)).text())" > %t/gpt2.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(layers=4, batch=4), name='llama').text())" > %t/llama-micro.mlir
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(layers=4, batch=8), name='llama').text())" > %t/llama.mlir
//
// RUN: %S/../Pipeline/Inputs/compare-pipelines.sh %t/gpt2-micro.mlir %t/gpt2.mlir 3 --random \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b;shard-state=1" \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b;shard-state=2" \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1;shard-state=3" \
// RUN:   "dp:2,pp:2,tp:2;pipeline-micro-batches=2;pipeline-schedule=interleaved;virtual-stages=2;shard-state=3" \
// RUN:   | FileCheck %s --check-prefix=GPT2
// GPT2-COUNT-4: 2 stage functions, {{[0-9]+}} sends, 158 results pass, 0 fail
//
// RUN: %S/../Pipeline/Inputs/compare-pipelines.sh %t/llama-micro.mlir %t/llama.mlir 3 --random \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;shard-state=2" \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b;shard-state=3" \
// RUN:   | FileCheck %s --check-prefix=LLAMA
// LLAMA-COUNT-2: 2 stage functions, {{[0-9]+}} sends, {{[1-9][0-9]*}} results pass, 0 fail
//
// Each coordinate's state is flat and sharded (both stage functions):
// RUN: rtx-opt %t/gpt2-micro.mlir '-rtx-distribute=mesh=dp:2,pp:2 pipeline-micro-batches=2 shard-state=3' | FileCheck %s --check-prefix=IR
// IR: func.func @gpt2_pp0({{.*}}rtx.flat = {axis = "dp"
// IR: rtx.reduce_scatter {{.*}} ["dp"]
// IR: func.func @gpt2_pp1({{.*}}rtx.flat = {axis = "dp"
// IR: rtx.reduce_scatter {{.*}} ["dp"]
