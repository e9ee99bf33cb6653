// Activation recompute changes where activations are computed, not what:
// for the 4-layer GPT-2 example, 3 AdamW steps with each policy equal the
// steps without recompute bit for bit (tolerance 0, one rank: the same ops on
// the same values), and the static estimate of peak activation bytes falls
// in the expected order: full < selective < none. With pipelines and data
// or tensor parallelism they equal the single-device step
// (test/Pipeline/gpt2-pipelines.mlir's checks, here with recompute).
//
// RUN: rm -rf %t && mkdir -p %t/b4 %t/b8
// RUN: for b in 4 8; do %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=4, batch=$b)).text())" > %t/b$b.mlir; %python %rtx_src_root/examples/make_lm_batch.py %t/b$b $b 8 37; done
// RUN: rtx-opt %t/b4.mlir -rtx-autodiff -rtx-optimizer=kind=adamw -o %t/none.mlir
// RUN: rtx-opt %t/b4.mlir -rtx-autodiff '-rtx-recompute=policy=full report=true' -rtx-optimizer=kind=adamw -mlir-print-op-on-diagnostic=false -o %t/full.mlir 2> %t/full.txt
// RUN: rtx-opt %t/b4.mlir -rtx-autodiff '-rtx-recompute=policy=selective report=true' -rtx-optimizer=kind=adamw -mlir-print-op-on-diagnostic=false -o %t/selective.mlir 2> %t/selective.txt
// RUN: rtx-run --compare %t/none.mlir %t/full.mlir --inputs %t/b4 --steps 3 --tolerance 0 | FileCheck %s --check-prefix=SAME
// RUN: rtx-run --compare %t/none.mlir %t/selective.mlir --inputs %t/b4 --steps 3 --tolerance 0 | FileCheck %s --check-prefix=SAME
// SAME-COUNT-158: max_abs=0.000e+00 rel_norm=0.000e+00 tolerance=0.0e+00 PASS
// SAME-NOT: FAIL
//
// RUN: %python -c "import re, sys; peak = lambda p: [int(x) for x in re.search(r'peak activation bytes (\d+) -> (\d+)', open(p).read()).groups()]; n, f = peak('%t/full.txt'); _, s = peak('%t/selective.txt'); print('full', f, 'selective', s, 'none', n, 'ordered' if f < s < n else 'NOT ORDERED')" | FileCheck %s --check-prefix=ORDER
// ORDER: full {{[0-9]+}} selective {{[0-9]+}} none {{[0-9]+}} ordered
//
// RUN: %S/../Pipeline/Inputs/compare-pipelines.sh %t/b4.mlir %t/b8.mlir 3 %t/b8 \
// RUN:   "pp:2;pipeline-micro-batches=2;recompute=full" \
// RUN:   "dp:2,pp:2;pipeline-micro-batches=2;pipeline-schedule=zb-h1;recompute=selective" \
// RUN:   "pp:2,tp:2;pipeline-micro-batches=2;recompute=full" | FileCheck %s --check-prefix=PIPE
// PIPE-COUNT-3: 2 stage functions, {{[1-9][0-9]*}} sends, 158 results pass, 0 fail
