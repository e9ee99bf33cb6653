// rtx-distribute is a pipeline of real passes: its options choose passes
// and forward to theirs, in the order docs/passes.md gives.
//
// RUN: rtx-opt %s '-rtx-distribute=mesh=dp:2,tp:2 optimizer=sgd lr=0.1 micro-batches=2 overlap=true seed-hints=q_proj:column,o_proj:row' -dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL
// The learning-rate schedule reaches rtx-optimizer.
// RUN: rtx-opt %s '-rtx-distribute=mesh=dp:2 warmup-steps=10 decay-steps=90 min-lr=1e-5' -dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: rtx-optimizer{{{.*}} decay-steps=90 {{.*}} min-lr=1.000000e-05 {{.*}} warmup-steps=10 {{.*}}}
// ALL:      builtin.module(
// ALL-NEXT:   rtx-add-mesh{mesh=dp:2,tp:2},
// ALL-NEXT:   rtx-pad-vocabulary{axis=tp},
// ALL-NEXT:   rtx-split-fused-projections,
// ALL-NEXT:   rtx-repeat-kv-heads,
// ALL-NEXT:   func.func(
// ALL-NEXT:     rtx-autodiff,
// ALL-NEXT:     rtx-accumulate-gradients{micro-batches=2}
// ALL-NEXT:   ),
// ALL-NEXT:   rtx-optimizer{{{.*}} kind=sgd lr=1.000000e-01 {{.*}}},
// ALL-NEXT:   rtx-seed-shardings{seed-hints={q_proj:column,o_proj:row} sequence-parallel=false strict-tp=false vocab-parallel=true},
// ALL-NEXT:   rtx-propagate-sharding{{.*}},
// ALL-NEXT:   rtx-partition,
// ALL-NEXT:   rtx-verify-distribution,
// ALL-NEXT:   func.func(
// ALL-NEXT:     rtx-bucket-collectives{bucket-bytes=26214400},
// ALL-NEXT:     rtx-schedule-overlap
// ALL-NEXT:   )
// ALL-NEXT: )
//
// Defaults are the passes' own (AdamW's, one micro-batch: no accumulation);
// bucket-bytes=-1 drops the bucketing, vocab-parallel=false the padding.
// RUN: rtx-opt %s '-rtx-distribute=mesh=tp:2 bucket-bytes=-1 vocab-parallel=false sequence-parallel=true' -dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIN
// MIN:      builtin.module(
// MIN-NEXT:   rtx-add-mesh{mesh=tp:2},
// MIN-NEXT:   rtx-split-fused-projections,
// MIN-NEXT:   rtx-repeat-kv-heads,
// MIN-NEXT:   func.func(
// MIN-NEXT:     rtx-autodiff
// MIN-NEXT:   ),
// MIN-NEXT:   rtx-optimizer{beta1=9.000000e-01 beta2=9.990000e-01 clip-norm=0.000000e+00 decay-steps=0 eps=1.000000e-08 kind=adamw lr=1.000000e-03 min-lr=0.000000e+00 mixed-precision=false warmup-steps=0 weight-decay=0.000000e+00},
// MIN-NEXT:   rtx-seed-shardings{{{ ?}}sequence-parallel=true strict-tp=false vocab-parallel=false},
// MIN-NEXT:   rtx-propagate-sharding{{.*}},
// MIN-NEXT:   rtx-partition,
// MIN-NEXT:   rtx-verify-distribution
// MIN-NEXT: )
//
// The pipeline's result is the passes' result, run one by one.
// RUN: rtx-opt %s '-rtx-distribute=mesh=dp:2,tp:2 optimizer=sgd lr=0.1' -o %t.pipeline.mlir
// RUN: rtx-opt %s '-rtx-add-mesh=mesh=dp:2,tp:2' -rtx-pad-vocabulary -rtx-autodiff '-rtx-optimizer=kind=sgd lr=0.1' -rtx-seed-shardings -rtx-propagate-sharding -rtx-partition -rtx-verify-distribution '-rtx-bucket-collectives=bucket-bytes=26214400' -o %t.passes.mlir
// RUN: diff %t.pipeline.mlir %t.passes.mlir

func.func @mlp(%x: tensor<8x16xf32>) -> tensor<f32> {
  %w1 = rtx.param "up" normal(0.0, 0.1) : tensor<32x16xf32>
  %h = rtx.linear %x, %w1 : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %a = rtx.gelu %h : tensor<8x32xf32>
  %w2 = rtx.param "down" normal(0.0, 0.1) : tensor<16x32xf32>
  %y = rtx.linear %a, %w2 : tensor<8x32xf32>, tensor<16x32xf32> -> tensor<8x16xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
