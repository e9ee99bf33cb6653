// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=3 bucket-bytes=-1 offload=nvme' | FileCheck %s --check-prefix=Z3
// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=1 bucket-bytes=-1 offload=cpu' | FileCheck %s --check-prefix=Z1
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=2 offload=disk' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 offload=cpu' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOSTAGE
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 optimizer=sgd shard-state=2 offload=cpu' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTHING

// Stage 3 with offload=nvme on the two-layer MLP (one flat buffer of 1381
// elements per rank): the parameter shard and both moments are references
// marked rtx.offload; each use reads the shard through its own fetch (the
// forward gather, the backward gather, the update), the moments are read
// just before the update, and the three new values go back to the tier
// right after it; the step returns the references.
// Z3-LABEL: func.func @mlp
// Z3-SAME: %[[P:arg[0-9]+]]: tensor<1381xf32> {rtx.flat
// Z3-SAME: rtx.offload = "nvme", rtx.sharding = #rtx.sharding<@mesh_dp2, {{\[\["dp"\]\]}}>, rtx.state = "flat0:root:param"
// Z3-SAME: %[[M:arg[0-9]+]]: tensor<1381xf32> {rtx.flat
// Z3-SAME: rtx.offload = "nvme", rtx.sharding = #rtx.sharding<@mesh_dp2, {{\[\["dp"\]\]}}>, rtx.state = "flat0:root:exp_avg"
// Z3-SAME: %[[V:arg[0-9]+]]: tensor<1381xf32> {rtx.flat
// Z3-SAME: rtx.offload = "nvme", rtx.sharding = #rtx.sharding<@mesh_dp2, {{\[\["dp"\]\]}}>, rtx.state = "flat0:root:exp_avg_sq"
// Z3: %[[T0:.*]] = rtx.offload_fetch_start %[[P]] : tensor<1381xf32> -> !rtx.token<tensor<1381xf32>>
// Z3-NEXT: %[[S0:.*]] = rtx.wait %[[T0]]
// Z3-NEXT: rtx.all_gather_start %[[S0]]
// Z3: rtx.offload_fetch_start %[[P]]
// Z3: rtx.reduce_scatter
// Z3: %[[TP:.*]] = rtx.offload_fetch_start %[[P]]
// Z3-NEXT: %[[TM:.*]] = rtx.offload_fetch_start %[[M]]
// Z3-NEXT: %[[TV:.*]] = rtx.offload_fetch_start %[[V]]
// Z3-NEXT: %[[SP:.*]] = rtx.wait %[[TP]]
// Z3-NEXT: %[[SM:.*]] = rtx.wait %[[TM]]
// Z3-NEXT: %[[SV:.*]] = rtx.wait %[[TV]]
// Z3-NEXT: %[[NP:[^,]*]], %[[NM:[^,]*]], %[[NV:[^ ]*]] = rtx.adamw_update %[[SP]], %{{.*}}, %[[SM]], %[[SV]]
// Z3-NEXT: %[[RV:.*]] = rtx.offload_store %[[NV]] into %[[V]] : tensor<1381xf32>
// Z3-NEXT: %[[RM:.*]] = rtx.offload_store %[[NM]] into %[[M]] : tensor<1381xf32>
// Z3-NEXT: %[[RP:.*]] = rtx.offload_store %[[NP]] into %[[P]] : tensor<1381xf32>
// Z3: return %{{.*}}, %{{.*}}, %[[RP]], %[[RM]], %[[RV]]

// Stage 1 with offload=cpu: the parameters stay whole and in memory; only
// the moments are offloaded, read just before the update and stored after.
// Z1-LABEL: func.func @mlp
// Z1-NOT: rtx.state = "flat0:root:param"
// Z1: rtx.all_reduce
// Z1: rtx.offload_fetch_start {{.*}} -> !rtx.token<tensor<1381xf32>>
// Z1-NEXT: rtx.offload_fetch_start {{.*}} -> !rtx.token<tensor<1381xf32>>
// Z1-NEXT: rtx.wait
// Z1-NEXT: rtx.wait
// Z1-NEXT: rtx.adamw_update
// Z1-NEXT: rtx.offload_store
// Z1-NEXT: rtx.offload_store
// Z1: rtx.all_gather

// BAD: rtx-shard-state: offload must be none, cpu or nvme, got 'disk'
// NOSTAGE: rtx-shard-state: stage must be 1, 2 or 3, got 0
// NOTHING: rtx-shard-state: offload=cpu has nothing to offload: the step keeps no optimizer state (SGD) and stage 2 keeps the parameters whole; offload needs AdamW or stage 3
