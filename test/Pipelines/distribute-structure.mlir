// rtx-distribute seeds tensor parallelism from the graph's structure, not
// from parameter names: a Llama block whose projections are called q, k, v,
// o, gate, up, down (or Hugging Face's q_proj, ...) gets Megatron's layout,
// 2 all-reduces over tp in the forward pass and 2 in the backward pass per
// layer (Shoeybi et al. 2019, section 3), and nothing else. Before, names
// were matched and these models were not partitioned at all: 0 collectives,
// every rank computing everything, without a word.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's/attention\.wq/q/; s/attention\.wk/k/; s/attention\.wv/v/; s/attention\.wo/o/; s/feed_forward\.w1/gate/; s/feed_forward\.w3/up/; s/feed_forward\.w2/down/' %rtx_src_root/examples/llama-block.mlir > %t/llama.mlir
// RUN: rtx-opt %t/llama.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd bucket-bytes=-1' -o %t/tp2.mlir 2>&1 | count 0
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] sum' %t/tp2.mlir | FileCheck %s --check-prefix=MEGATRON
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t/tp2.mlir
// MEGATRON: {{^}}4{{$}}
// RUN: FileCheck %s --check-prefix=LAYOUT < %t/tp2.mlir
// LAYOUT-DAG: rtx.param = "layers.0.q.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.k.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.v.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.o.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.gate.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.up.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.down.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\], \["tp"\]\]}}>
// LAYOUT-DAG: rtx.param = "layers.0.ffn_norm.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\[\]\]}}>
//
// tp=3, the case that was reported: width 48, 6 query and 3 key/value heads,
// MLP 96, so that 3 divides every split dimension. The same 4 all-reduces,
// and 3 SGD steps equal the single-device train step.
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.llama_block(models.LlamaConfig(width=48, heads=6, kv_heads=3, hidden=96)).text())" | sed 's/attention\.wq/q/; s/attention\.wk/k/; s/attention\.wv/v/; s/attention\.wo/o/; s/feed_forward\.w1/gate/; s/feed_forward\.w3/up/; s/feed_forward\.w2/down/' > %t/llama3.mlir
// RUN: rtx-opt %t/llama3.mlir '-rtx-distribute=mesh=tp:3 optimizer=sgd bucket-bytes=-1' -o %t/tp3.mlir 2>&1 | count 0
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp3 \["tp"\] sum' %t/tp3.mlir | FileCheck %s --check-prefix=MEGATRON
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t/tp3.mlir
// RUN: FileCheck %s --check-prefix=HEADS < %t/tp3.mlir
// HEADS: rtx.attention {{.*}} : tensor<2x2x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x2x8x8xf32>
// RUN: %S/../Distributed/compare-meshes.sh %t/llama3.mlir "kind=sgd lr=0.1" 3 --random tp:3 dp:2,tp:3 | FileCheck %s --check-prefix=EQUAL
// EQUAL-COUNT-2: {{[1-9][0-9]*}} results pass, 0 fail
//
// Hugging Face's names (self_attn.q_proj, mlp.gate_proj, ...): the same.
// RUN: sed 's/attention\.wq/self_attn.q_proj/; s/attention\.wk/self_attn.k_proj/; s/attention\.wv/self_attn.v_proj/; s/attention\.wo/self_attn.o_proj/; s/feed_forward\.w1/mlp.gate_proj/; s/feed_forward\.w3/mlp.up_proj/; s/feed_forward\.w2/mlp.down_proj/' %rtx_src_root/examples/llama-block.mlir > %t/hf.mlir
// RUN: rtx-opt %t/hf.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd bucket-bytes=-1' -o %t/hf-tp2.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] sum' %t/hf-tp2.mlir | FileCheck %s --check-prefix=MEGATRON
//
// A model in which tp finds nothing to split is a warning that names the
// axis and why; seed-hints (ShardingConfig(tp_hints=...) in Python) name
// what structure does not find.
// RUN: rtx-opt %s '-rtx-distribute=mesh=tp:2' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTHING
// NOTHING: warning: mesh axis "tp" of size 2 splits nothing in @single_layer: no linear or matmul over a parameter feeds another through elementwise ops or attention (Megatron's column- and row-parallel pair), and no cross-entropy's vocabulary comes from one; every rank computes the whole model (give seed-hints=NAME:column|row, or rtx.sharding seeds)
// RUN: rtx-opt %s '-rtx-distribute=mesh=tp:2 seed-hints=proj:column' -o %t/hinted.mlir 2>&1 | count 0
// RUN: FileCheck %s --check-prefix=HINTED < %t/hinted.mlir
// HINTED: rtx.param = "proj.weight", {{[^}]*}}rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// HINTED: rtx.linear {{.*}} -> tensor<4x8xf32>

func.func @single_layer(%x: tensor<4x16xf32>) -> tensor<f32> {
  %w = rtx.param "proj.weight" normal(0.0, 0.1) : tensor<16x16xf32>
  %y = rtx.linear %x, %w : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
  %t = rtx.tanh %y : tensor<4x16xf32>
  %l = rtx.reduce mean %t dims [0, 1] : tensor<4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
