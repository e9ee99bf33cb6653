// The number and kind of collectives per transformer layer equal the
// published analyses (Megatron-LM, Shoeybi et al. 2019, section 3):
// tensor parallelism needs 2 all-reduces over tp in the forward pass and 2
// in the backward pass, and nothing else; data parallelism all-reduces every
// gradient over dp (plus the loss), and nothing over other axes. These runs
// keep one collective per tensor (bucket-bytes=-1) to count them; the
// default buckets them (see BUCKET below and bucket-collectives.mlir).
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd bucket-bytes=-1' -o %t.tp.mlir
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
// FORWARD: rtx.swiglu
// FORWARD: rtx.linear {{.*}}partial = ["tp"]
// FORWARD-NEXT: rtx.all_reduce
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=dp:2 optimizer=sgd bucket-bytes=-1' -o %t.dp.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_dp2 \["dp"\] sum' %t.dp.mlir | FileCheck %s --check-prefix=DP
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t.dp.mlir
// 9 parameters, each gradient once, and the loss.
// DP: {{^}}10{{$}}
//
// By default rtx-distribute buckets them (rtx-bucket-collectives, 25 MiB):
// the 9 gradients and the loss, 9281 floats, go in one all-reduce.
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=dp:2 optimizer=sgd' | FileCheck %s --check-prefix=BUCKET
// BUCKET: rtx.concat
// BUCKET-SAME: -> tensor<9281xf32>
// BUCKET-NEXT: rtx.all_reduce %{{.*}} on @mesh_dp2 ["dp"] sum : tensor<9281xf32> -> tensor<9281xf32>
// BUCKET-NOT: rtx.all_reduce
//
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=dp:2,tp:2 optimizer=sgd bucket-bytes=-1' -o %t.both.mlir
// RUN: grep -c 'on @mesh_dp2_tp2 \["tp"\]' %t.both.mlir | FileCheck %s --check-prefix=TP
//
// Megatron sequence parallelism: the forward pass of a layer has an
// all-gather along the sequence before each tensor-parallel region and a
// reduce-scatter after it, instead of the two all-reduces.
// RUN: rtx-opt %rtx_src_root/examples/llama-block.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd sequence-parallel=true bucket-bytes=-1' -o %t.sp.mlir
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
//
// GPT-2 (2 layers, vocabulary 44) with c_attn's features in Megatron's
// per-head order: the fused projection is column-parallel by heads, so each
// rank forms q, k and v of its own heads without gathering them, and a layer
// has exactly the Llama block's communication: 2 all-reduces forward, 2
// backward. (Vocabulary kept whole here, so nothing else.)
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4, vocab=44, qkv_layout='heads')).text())" > %t.gpt2.mlir
// RUN: rtx-opt %t.gpt2.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd vocab-parallel=false bucket-bytes=-1' -o %t.gpt2-tp.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] sum' %t.gpt2-tp.mlir | FileCheck %s --check-prefix=GPT2-LAYERS
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)|\["tp"\] max' %t.gpt2-tp.mlir
// GPT2-LAYERS: {{^}}8{{$}}
// RUN: FileCheck %s --check-prefix=GPT2-FORWARD < %t.gpt2-tp.mlir
// GPT2-FORWARD-COUNT-2: rtx.attention {{.*}}causal {{.*}}: tensor<4x1x8x16xf32>
// GPT2-FORWARD-NOT: rtx.attention
// GPT2-FORWARD: rtx.attention_grad {{.*}}: tensor<4x1x8x16xf32>
//
// With the vocabulary split over tp (the default), Megatron's vocab-parallel
// analysis adds: one all-reduce of the embedding's partial sums (forward),
// three of per-token loss statistics (max, label logit, sum of
// exponentials; [B, S] each, the logits are never gathered), and one of the
// LM head's input gradient (backward).
// RUN: rtx-opt %t.gpt2.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd bucket-bytes=-1' -o %t.gpt2-vocab.mlir
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] sum' %t.gpt2-vocab.mlir | FileCheck %s --check-prefix=GPT2-VOCAB
// RUN: grep -c 'rtx.all_reduce .* on @mesh_tp2 \["tp"\] max .* tensor<4x8xf32>' %t.gpt2-vocab.mlir | FileCheck %s --check-prefix=GPT2-MAX
// RUN: not grep -E 'rtx\.(all_gather|reduce_scatter|all_to_all|mesh_slice)' %t.gpt2-vocab.mlir
// GPT2-VOCAB: {{^}}12{{$}}
// GPT2-MAX: {{^}}1{{$}}
// RUN: FileCheck %s --check-prefix=GPT2-LOSS < %t.gpt2-vocab.mlir
// GPT2-LOSS: rtx.embedding %{{.*}} vocab on @mesh_tp2 ["tp"] {{.*}} : tensor<22x32xf32>
// GPT2-LOSS: rtx.linear {{.*}} -> tensor<4x8x22xf32>
// GPT2-LOSS-NEXT: rtx.vocab_logit_stats
// GPT2-LOSS: rtx.vocab_cross_entropy
// GPT2-LOSS: rtx.vocab_cross_entropy_grad
// GPT2-LOSS: rtx.embedding_grad %{{.*}} vocab on @mesh_tp2 ["tp"] {{.*}} -> tensor<22x32xf32>
//
// A vocabulary tp does not divide (37) is padded to a multiple of tp where it
// is used: the tied table gets zero rows (40 = 4 x 10), the padded logits
// -inf before the loss (and no gradient after it); the table itself stays
// replicated, so its gradient is gathered once to drop the padding.
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=2, batch=4, heads=4, qkv_layout='heads')).text())" > %t.gpt2-v37.mlir
// RUN: rtx-opt %t.gpt2-v37.mlir '-rtx-distribute=mesh=tp:4 optimizer=sgd bucket-bytes=-1' -o %t.gpt2-v37-tp.mlir 2>&1 | FileCheck %s --check-prefix=PAD-WARNING
// RUN: FileCheck %s --check-prefix=PAD < %t.gpt2-v37-tp.mlir
// RUN: grep -c 'rtx.all_gather' %t.gpt2-v37-tp.mlir | FileCheck %s --check-prefix=PAD-GATHERS
// PAD-WARNING: warning: vocabulary of 37 classes padded to 40 for axis "tp" of size 4: the padded classes are masked out of the loss
// PAD: %[[TABLE:.*]] = rtx.concat %arg0, %{{.*}} dim 0 {{.*}} : tensor<37x32xf32>, tensor<3x32xf32> -> tensor<40x32xf32>
// PAD: %[[SHARD:.*]] = rtx.mesh_slice %[[TABLE]] on @mesh_tp4 ["tp"] dim 0 {{.*}} -> tensor<10x32xf32>
// PAD: rtx.embedding %[[SHARD]], %{{.*}} vocab on @mesh_tp4 ["tp"]
// PAD: %[[LOGITS:.*]] = rtx.linear %{{.*}}, %[[SHARD]] {{.*}} -> tensor<4x8x10xf32>
// PAD: %[[MASKED:.*]] = rtx.masked_fill %[[LOGITS]], %{{.*}}, 0xFFF0000000000000
// PAD-NEXT: rtx.vocab_logit_stats %[[MASKED]]
// PAD: %[[DPAD:.*]] = rtx.all_gather %{{.*}} on @mesh_tp4 ["tp"] dim 0 {{.*}} : tensor<10x32xf32> -> tensor<40x32xf32>
// PAD-NEXT: rtx.split %[[DPAD]] dim 0 {{.*}} -> tensor<37x32xf32>, tensor<3x32xf32>
// PAD-GATHERS: {{^}}1{{$}}
//
// With Megatron sequence parallelism the labels are split along the
// sequence like every data input; the loss gathers them (integers, [B, S])
// rather than moving the vocabulary-split logits.
// RUN: rtx-opt %t.gpt2.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd sequence-parallel=true bucket-bytes=-1' -o %t.gpt2-sp.mlir
// RUN: FileCheck %s --check-prefix=GPT2-SP < %t.gpt2-sp.mlir
// RUN: not grep 'rtx.all_to_all' %t.gpt2-sp.mlir
// GPT2-SP: rtx.linear {{.*}} -> tensor<4x8x22xf32>
// GPT2-SP-NEXT: %[[LABELS:.*]] = rtx.all_gather %{{.*}} on @mesh_tp2 ["tp"] dim 1 {{.*}} : tensor<4x4xi32> -> tensor<4x8xi32>
// GPT2-SP-NEXT: rtx.vocab_logit_stats %{{.*}}, %[[LABELS]] on @mesh_tp2 ["tp"]
//
// GPT-2's own order (q | k | v) is not a block split by heads:
// rtx-split-fused-projections makes c_attn three projections over blocks of
// the user's weight (rtx.part_of), which tp splits by head: each rank holds
// its block of q, of k and of v, attention runs on 1 of the 2 heads, and
// nothing is gathered; strict-tp finds no weight left whole.
// RUN: %python -c "import sys; sys.path.insert(0, '%rtx_src_root/python'); from rtx import models; print(models.gpt2(models.GPTConfig(layers=1, batch=4, vocab=44)).text())" > %t.gpt2-qkv.mlir
// RUN: rtx-opt %t.gpt2-qkv.mlir '-rtx-distribute=mesh=tp:2 optimizer=sgd bucket-bytes=-1 strict-tp=true' -o %t.gpt2-qkv-tp.mlir
// RUN: FileCheck %s --check-prefix=QKV < %t.gpt2-qkv-tp.mlir
// RUN: not grep 'rtx.all_gather' %t.gpt2-qkv-tp.mlir
// QKV-DAG: rtx.param = "transformer.h.0.attn.c_attn.weight@0", rtx.part_of = {dim = 0 : i64, name = "transformer.h.0.attn.c_attn.weight", offset = 0 : i64, size = 96 : i64}, rtx.seed = 0 : i64, rtx.sharding = #rtx.sharding<@mesh_tp2, {{\[\["tp"\], \[\]\]}}>
// QKV-DAG: rtx.param = "transformer.h.0.attn.c_attn.weight@2", rtx.part_of = {dim = 0 : i64, name = "transformer.h.0.attn.c_attn.weight", offset = 64 : i64, size = 96 : i64}
// QKV-DAG: rtx.attention {{.*}} : tensor<4x1x8x16xf32>
