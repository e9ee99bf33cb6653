// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=3 bucket-bytes=-1' | FileCheck %s --check-prefix=Z3
// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=1 bucket-bytes=-1' | FileCheck %s --check-prefix=Z1
// RUN: rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=2 unit=param report=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Stage 3 on the two-layer MLP (one unit, "root": its four parameters in
// one flat buffer of 2762 elements, 1381 per rank): the parameters are
// shards of the buffer, gathered before the forward use and again before the backward
// use (the second one prefetched), the gradients reduce-scattered, one
// update per buffer, and the results are the shards with rtx.flat.
// Z3-LABEL: func.func @mlp
// Z3-SAME: tensor<1381xf32> {rtx.flat = {axis = "dp", length = 2762 : i64, members = [{init = #rtx.init<normal(0.000000e+00, 1.000000e-01)>, kind = "param", name = "fc1.weight", offset = 0 : i64, result = 1 : i64
// Z3: rtx.all_gather_start
// Z3: rtx.all_gather %{{.*}} on @mesh_dp2 ["dp"] dim 0 : tensor<1381xf32> -> tensor<2762xf32>
// Z3: rtx.linear
// Z3: rtx.cross_entropy_grad
// Z3: rtx.wait
// Z3: rtx.reduce_scatter %{{.*}} on @mesh_dp2 ["dp"] sum dim 0 : tensor<2762xf32> -> tensor<1381xf32>
// Z3: rtx.adamw_update %{{.*}} : tensor<1381xf32>, tensor<1381xf32>, tensor<f32>
// Z3-NOT: rtx.adamw_update {{.*}}tensor<64x32xf32>
// Z3: return

// Stage 1: the parameters stay whole; the moments are shards; the new
// parameters are gathered after the update; the other results keep their
// step index.
// Z1-LABEL: func.func @mlp
// Z1: rtx.all_reduce
// Z1: rtx.mesh_slice %{{.*}} on @mesh_dp2 ["dp"] dim 0 : tensor<2762xf32> -> tensor<1381xf32>
// Z1: rtx.adamw_update
// Z1: rtx.all_gather %{{.*}} : tensor<1381xf32> -> tensor<2762xf32>
// Z1: return

// One buffer per parameter with unit=param, each reported.
// REPORT-COUNT-4: remark: rtx-shard-state: buffer flat{{[0-9]}}:fc{{[12]}}.{{weight|bias}}: 1 members
