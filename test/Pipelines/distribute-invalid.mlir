// rtx-distribute's errors and warnings come from the passes it runs; each
// names its pass.
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:2 sequence-parallel=true' 2>&1 | FileCheck %s --check-prefix=MEGATRON-SP
// MEGATRON-SP: error: rtx-seed-shardings: sequence-parallel=true needs a tp axis larger than 1 (Megatron sequence parallelism splits the sequence over tp)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp2' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: error: rtx-add-mesh: bad mesh axis 'dp2'; expected name:size, e.g. mesh=dp:2,tp:2
// RUN: not rtx-opt %s '-rtx-distribute=mesh=' 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: rtx-add-mesh: mesh='' names no axis; expected name:size, e.g. mesh=dp:2,tp:2
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:4294967296,tp:4294967296' 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: rtx-add-mesh: mesh=dp:4294967296,tp:4294967296 has more ranks than int64 can count (the product of the axis sizes overflows)
// Micro-batch counts below 1 are refused, not taken as 1.
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:2 micro-batches=0' 2>&1 | FileCheck %s --check-prefix=MICRO0
// MICRO0: error: rtx-accumulate-gradients: micro-batches=0 must be at least 1 (1: no gradient accumulation)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:2 micro-batches=-2' 2>&1 | FileCheck %s --check-prefix=MICRONEG
// MICRONEG: error: rtx-accumulate-gradients: micro-batches=-2 must be at least 1 (1: no gradient accumulation)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=ep:2' 2>&1 | FileCheck %s --check-prefix=AXIS
// AXIS: error: rtx-seed-shardings: no seeding rule for mesh axis 'ep'; expected dp, dp_replicate, tp, sp or pp
// Pipeline options without a pp axis are refused, not ignored; so are more
// stages than the model has layer boundaries, and gradient clipping.
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:2 pipeline-schedule=zb-h1' 2>&1 | FileCheck %s --check-prefix=NOPP
// NOPP: error: rtx-pipeline: no op has an 'rtx.stage'; run rtx-split-stages before rtx-autodiff (in rtx-distribute: a mesh with a pp axis)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=pp:64' 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: error: cannot split {{.*}} into 64 pipeline stages: it has {{[0-9]+}} layer boundaries
// RUN: not rtx-opt %s '-rtx-distribute=mesh=pp:2 clip-norm=1.0' 2>&1 | FileCheck %s --check-prefix=CLIP
// CLIP: error: {{.*}} combines tensors of pipeline stages 0 1 within a micro-batch
// RUN: not rtx-opt %s '-rtx-distribute=mesh=tp:2 seed-hints=fc1' 2>&1 | FileCheck %s --check-prefix=HINT
// HINT: error: rtx-seed-shardings: bad seed hint 'fc1'; expected NAME:column or NAME:row (NAME a parameter-name suffix, e.g. q_proj:column)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=tp:2 optimizer=lion' 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// OPTIMIZER: error: rtx-optimizer: unknown kind 'lion'; expected sgd or adamw
//
// Dimensions an axis does not divide stay replicated, with a warning that
// names them; a tp axis left with nothing to split says so.
// RUN: rtx-opt %s '-rtx-distribute=mesh=dp:4,tp:4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIVIDE
// DIVIDE-DAG: warning: parameter "fc1.weight" stays replicated: dimension 0 of size 6 is not divisible by axis "tp" of size 4
// DIVIDE-DAG: warning: parameter "fc2.weight" stays replicated: dimension 1 of size 6 is not divisible by axis "tp" of size 4
// DIVIDE-DAG: warning: data argument 0 stays replicated: dimension 0 of size 6 is not divisible by axis "dp" of size 4
// DIVIDE-DAG: warning: mesh axis "tp" of size 4 splits nothing in @mlp: no dimension it would split is divisible by 4; every rank computes the whole model (give seed-hints=NAME:column|row, or rtx.sharding seeds)

func.func @mlp(%x: tensor<6x8xf32>) -> tensor<f32> {
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.1) : tensor<6x8xf32>
  %h = rtx.linear %x, %w1 : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x6xf32>
  %a = rtx.gelu %h : tensor<6x6xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.1) : tensor<4x6xf32>
  %y = rtx.linear %a, %w2 : tensor<6x6xf32>, tensor<4x6xf32> -> tensor<6x4xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<6x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
