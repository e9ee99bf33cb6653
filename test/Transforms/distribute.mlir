// The number and kind of collectives per transformer layer equal the
// published analyses (Megatron-LM, Shoeybi et al. 2019, section 3):
// tensor parallelism needs 2 all-reduces over tp in the forward pass and 2
// in the backward pass, and nothing else; data parallelism all-reduces every
// gradient over dp (plus the loss), and nothing over other axes.
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd' -o %t.tp.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] sum' %t.tp.mlir | FileCheck %s --check-prefix=TP
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t.tp.mlir
// TP: {{^}}4{{$}}
//
// Forward: the attention output projection (wo) and the MLP down projection
// (w2) reduce their partial sums; their inputs stay split by heads/hidden.
// RUN: FileCheck %s --check-prefix=FORWARD < %t.tp.mlir
// FORWARD: rtx.attention {{.*}}tensor<2x2x8x8xf32>
// FORWARD: rtx.linear {{.*}}partial = ["tp"]
// FORWARD-NEXT: rtx.all_reduce
// FORWARD: rtx.silu
// FORWARD: rtx.linear {{.*}}partial = ["tp"]
// FORWARD-NEXT: rtx.all_reduce
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=dp:2 optimizer=sgd' -o %t.dp.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_dp2 \["dp"\] sum' %t.dp.mlir | FileCheck %s --check-prefix=DP
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t.dp.mlir
// 9 parameters, each gradient once, and the loss.
// DP: {{^}}10{{$}}
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=dp:2,tp:2 optimizer=sgd' -o %t.both.mlir
// RUN: grep -c 'on @mesh_dp2_tp2 \["tp"\]' %t.both.mlir | FileCheck %s --check-prefix=TP
//
// Megatron sequence parallelism: the forward pass of a layer has an
// all-gather along the sequence before each tensor-parallel region and a
// reduce-scatter after it, instead of the two all-reduces.
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd sequence-parallel=true' -o %t.sp.mlir
// RUN: FileCheck %s --check-prefix=MEGATRON-SP < %t.sp.mlir
// MEGATRON-SP: rtx.all_gather %{{.*}} on @mesh_tp2 ["tp"] dim 1 {{.*}} : tensor<2x4x32xf32> -> tensor<2x8x32xf32>
// MEGATRON-SP-NOT: rtx.all_reduce
// MEGATRON-SP: rtx.attention
// MEGATRON-SP-NOT: rtx.all_reduce
// MEGATRON-SP: rtx.reduce_scatter %{{.*}} on @mesh_tp2 ["tp"] sum dim 1 {{.*}} : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
// MEGATRON-SP: rtx.all_gather %{{.*}} on @mesh_tp2 ["tp"] dim 1
// MEGATRON-SP-NOT: rtx.all_reduce
// MEGATRON-SP: rtx.silu
// MEGATRON-SP-NOT: rtx.all_reduce
// MEGATRON-SP: rtx.reduce_scatter %{{.*}} on @mesh_tp2 ["tp"] sum dim 1
