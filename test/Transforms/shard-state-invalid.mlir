// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=4' 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: error: rtx-shard-state: stage must be 1, 2 or 3, got 4
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=axis=zz' 2>&1 | FileCheck %s --check-prefix=AXIS
// AXIS: error: rtx-shard-state: mesh @mesh_dp2 has no axis "zz"
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=unit=layer' 2>&1 | FileCheck %s --check-prefix=UNIT
// UNIT: error: rtx-shard-state: unit must be block, param, all, size or prefix, got 'layer'
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 shard-state=2 reduce-dtype=f8' 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: rtx-shard-state: reduce-dtype must be f32, bf16 or f16, got 'f8'
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir -rtx-autodiff -rtx-shard-state 2>&1 | FileCheck %s --check-prefix=NOSTEP
// NOSTEP: error: rtx-shard-state: no training step
// A sharding option without shard-state is refused, not ignored.
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2 reduce-dtype=bf16' 2>&1 | FileCheck %s --check-prefix=NOSTAGE
// NOSTAGE: error: rtx-shard-state: stage must be 1, 2 or 3, got 0

// auto-wrap policies take their own option, and their option needs them.
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=3 unit=size' 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: rtx-shard-state: unit=size and min-unit-params=N (N > 0) go together, got unit=size min-unit-params=0
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=3 min-unit-params=100' 2>&1 | FileCheck %s --check-prefix=SIZE-ONLY
// SIZE-ONLY: rtx-shard-state: unit=size and min-unit-params=N (N > 0) go together, got unit=block min-unit-params=100
// RUN: not rtx-opt %rtx_src_root/examples/mlp.mlir '-rtx-distribute=mesh=dp:2' '-rtx-shard-state=stage=3 unit=prefix' 2>&1 | FileCheck %s --check-prefix=PREFIX
// PREFIX: rtx-shard-state: unit=prefix and unit-prefixes=a,b go together, got unit=prefix with 0 prefixes
