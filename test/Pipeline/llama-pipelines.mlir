// A stack of 4 Llama-style blocks (grouped key/value heads, rotary
// embeddings, SwiGLU) pipelined with every schedule on pp=2 and pp=4 and on
// 8-rank dp x pp, tp x pp and dp x tp x pp meshes: 3 AdamW steps equal the
// single-device train step on the whole batch, on random inputs; so does a
// schedule written by hand (Inputs/backward-last-first.txt: the backward of
// the second micro-batch before the first's).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for b in 2 4 8; do %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(layers=4, batch=$b), name='llama').text())" > %t/b$b.mlir; done
// RUN: %S/Inputs/compare-pipelines.sh %t/b2.mlir %t/b4.mlir 3 --random \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=gpipe" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=interleaved;virtual-stages=2" \
// RUN:   "dp:2,pp:2,tp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule-file=%S/Inputs/backward-last-first.txt" \
// RUN:   | FileCheck %s --check-prefix=PP2
// RUN: %S/Inputs/compare-pipelines.sh %t/b2.mlir %t/b8.mlir 3 --random \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=gpipe" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=1f1b" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=zb-h1" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=interleaved;virtual-stages=2" \
// RUN:   "dp:2,pp:4;pipeline-micro-batches=4" \
// RUN:   "pp:4,tp:2;pipeline-micro-batches=4" \
// RUN:   | FileCheck %s --check-prefix=PP4
// PP2-COUNT-6: 2 stage functions, {{[1-9][0-9]*}} sends, 110 results pass, 0 fail
// PP2-NOT: fail
// PP4-COUNT-6: 4 stage functions, {{[1-9][0-9]*}} sends, 110 results pass, 0 fail
