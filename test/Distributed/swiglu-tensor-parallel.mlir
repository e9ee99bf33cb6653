// rtx.swiglu (Llama's fused silu(gate) * up) under tensor parallelism: the
// gate and up projections are column-parallel, so on tp=2 each rank runs the
// fused op on its half of the 64 hidden columns, in the forward pass and in
// the backward pass (whose silu and product see the same local shape), and
// the only collectives are Megatron's: one all-reduce after attention's
// output projection and one after the MLP's down projection, each forward
// and backward. 3 AdamW steps equal the single-device step.
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=tp:2 lr=0.01' -o %t
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=COLLECTIVES < %t
// CHECK: rtx.swiglu %{{.*}}, %{{.*}} {rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[}}[], [], ["tp"]]>} : tensor<2x8x32xf32>
// COLLECTIVES-NOT: rtx.all_gather
// COLLECTIVES-COUNT-4: rtx.all_reduce %{{.*}} on @mesh_tp2 ["tp"]
// COLLECTIVES-NOT: rtx.all_reduce
//
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/llama-block.mlir "kind=adamw lr=0.01" 3 --random tp:2 | FileCheck %s --check-prefix=EQUAL
// EQUAL: {{[1-9][0-9]*}} results pass, 0 fail
