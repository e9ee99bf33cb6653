// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp:2 sequence-parallel=true' 2>&1 | FileCheck %s --check-prefix=MEGATRON-SP
// MEGATRON-SP: error: rtx-distribute: sequence-parallel=true needs a tp axis larger than 1 (Megatron sequence parallelism splits the sequence over tp)
// RUN: not rtx-opt %s '-rtx-distribute=mesh=dp2' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: error: rtx-distribute: bad mesh axis 'dp2'; expected name:size, e.g. mesh=dp:2,tp:2
// RUN: not rtx-opt %s '-rtx-distribute=mesh=pp:2' 2>&1 | FileCheck %s --check-prefix=AXIS
// AXIS: error: rtx-distribute: unknown mesh axis 'pp'; expected dp, tp or sp
// RUN: rtx-opt %s '-rtx-distribute=mesh=dp:4,tp:4' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIVIDE
// DIVIDE-DAG: warning: parameter "fc1.weight" stays replicated: dimension 0 of size 6 is not divisible by axis "tp" of size 4
// DIVIDE-DAG: warning: data argument 0 stays replicated: dimension 0 of size 6 is not divisible by axis "dp" of size 4

func.func @mlp(%x: tensor<6x8xf32>) -> tensor<f32> {
  %w = rtx.param "fc1.weight" normal(0.0, 0.1) : tensor<6x8xf32>
  %y = rtx.linear %x, %w : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<6x6xf32>
  %l = rtx.reduce mean %y dims [0, 1] : tensor<6x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}
