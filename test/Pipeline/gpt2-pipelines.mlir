// The 4-layer GPT-2 example (wte tied between the embedding on the first
// stage and the LM head on the last) pipelined with every schedule on pp=2
// and pp=4, on 3 stages (which do not divide the 4 layers), and on dp x pp,
// tp x pp and dp x tp x pp meshes of 8 ranks: 3 AdamW steps equal the
// single-device train step on the whole batch (micro-batches x 4 rows).
// rtx-run also checks that every copy of a tensor two stages hold (wte, the
// step count) is the same on both. Each line says the program really is
// pipelined: one function per pp coordinate, with sends between them.
//
// Tolerance 1e-4 (design.md, after optimizer steps): the pipelined step sums
// the micro-batches' gradients in another order than the whole-batch step.
//
// RUN: rm -rf %t && mkdir -p %t/b8 %t/b12 %t/b16
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=4)).text())" > %t/micro.mlir
// RUN: for b in 8 12 16; do %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=$b)).text())" > %t/b$b.mlir; %python %rtx_src_root/examples/make_lm_batch.py %t/b$b $b 8 37; done
//
// RUN: %S/Inputs/compare-pipelines.sh %t/micro.mlir %t/b8.mlir 3 %t/b8 \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=gpipe" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1" \
// RUN:   "pp:2;pipeline-micro-batches=2;pipeline-schedule=interleaved;virtual-stages=2" \
// RUN:   "dp:2,pp:2,tp:2;pipeline-micro-batches=2" \
// RUN:   "pp:2,tp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1" \
// RUN:   | FileCheck %s --check-prefix=PP2
// PP2: pp:2;pipeline-micro-batches=2;pipeline-schedule=gpipe: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP2: pp:2;pipeline-micro-batches=2;pipeline-schedule=1f1b: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP2: pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP2: pp:2;pipeline-micro-batches=2;pipeline-schedule=interleaved;virtual-stages=2: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP2: dp:2,pp:2,tp:2;pipeline-micro-batches=2: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP2: pp:2,tp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
//
// RUN: %S/Inputs/compare-pipelines.sh %t/micro.mlir %t/b16.mlir 3 %t/b16 \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=gpipe" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=1f1b" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=zb-h1" \
// RUN:   "pp:4;pipeline-micro-batches=4;pipeline-schedule=interleaved;virtual-stages=2" \
// RUN:   "dp:2,pp:4;pipeline-micro-batches=4" \
// RUN:   "pp:4,tp:2;pipeline-micro-batches=4;pipeline-schedule=interleaved;virtual-stages=2" \
// RUN:   | FileCheck %s --check-prefix=PP4
// PP4: pp:4;pipeline-micro-batches=4;pipeline-schedule=gpipe: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP4: pp:4;pipeline-micro-batches=4;pipeline-schedule=1f1b: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP4: pp:4;pipeline-micro-batches=4;pipeline-schedule=zb-h1: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP4: pp:4;pipeline-micro-batches=4;pipeline-schedule=interleaved;virtual-stages=2: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP4: dp:2,pp:4;pipeline-micro-batches=4: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
// PP4: pp:4,tp:2;pipeline-micro-batches=4;pipeline-schedule=interleaved;virtual-stages=2: 4 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
//
// Three stages for four layers (the split balances cost, not layers).
// RUN: %S/Inputs/compare-pipelines.sh %t/micro.mlir %t/b12.mlir 3 %t/b12 \
// RUN:   "pp:3;pipeline-micro-batches=3" "pp:3;pipeline-micro-batches=3;pipeline-schedule=zb-h1" \
// RUN:   | FileCheck %s --check-prefix=PP3
// PP3-COUNT-2: 3 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
