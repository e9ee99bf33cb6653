// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=3 unit=size min-unit-params=5000 report=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=3 unit=prefix unit-prefixes=transformer.h.1,transformer.h.1.mlp report=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=PREFIX
// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir '-rtx-distribute=mesh=dp:2 shard-state=3 shard-unit=prefix shard-unit-prefixes=transformer.h.1,transformer.h.1.mlp' | FileCheck %s --check-prefix=DISTRIBUTE

// FSDP's auto-wrap policies (Python's ShardingConfig(auto_wrap=...)).
//
// unit=size: bottom up over the dotted parameter names of the 2-layer
// GPT-2 (13,056 elements per block), a prefix becomes a unit once the
// elements under it that no deeper unit took reach 5,000: each block's MLP
// (8,352) first; the rest of the two blocks (2 x 4,352) then makes
// "transformer.h" one; the embeddings and the final norm stay in root.
// SIZE-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:root: 4 members, 1504 elements
// SIZE-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:transformer.h: 16 members, 8704 elements
// SIZE-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:transformer.h.0.mlp: 4 members, 8352 elements
// SIZE-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:transformer.h.1.mlp: 4 members, 8352 elements
//
// unit=prefix: the listed prefixes (Python finds them from module classes);
// a parameter belongs to the longest it lies under, the rest to root.
// PREFIX-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:root: 16 members, 14208 elements
// PREFIX-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:transformer.h.1: 8 members, 4352 elements
// PREFIX-DAG: remark: rtx-shard-state: buffer flat{{[0-9]}}:transformer.h.1.mlp: 4 members, 8352 elements
//
// rtx-distribute passes them on (shard-unit, shard-unit-prefixes):
// DISTRIBUTE-DAG: rtx.state = "flat{{[0-9]}}:transformer.h.1:param"
// DISTRIBUTE-DAG: rtx.state = "flat{{[0-9]}}:transformer.h.1.mlp:param"
