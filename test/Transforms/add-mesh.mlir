// RUN: rtx-opt %s '-rtx-add-mesh=mesh=dp:2,tp:4' | FileCheck %s
// RUN: rtx-opt %s '-rtx-add-mesh=mesh=sp:3' | FileCheck %s --check-prefix=SP
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=dp:2,dp:2' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=tp:0' 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=dp:2' '-rtx-add-mesh=mesh=tp:2' 2>&1 | FileCheck %s --check-prefix=AGAIN
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=' 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=,' 2>&1 | FileCheck %s --check-prefix=COMMA
// RUN: not rtx-opt %s '-rtx-add-mesh=mesh=dp:65536,tp:65536,pp:65536,sp:65536' 2>&1 | FileCheck %s --check-prefix=RANKS

// The mesh is named by its shape, axes major to minor.
// CHECK: rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]
// SP: rtx.mesh @mesh_sp3 ["sp"=3]
// TWICE: error: rtx-add-mesh: mesh axis 'dp' given twice
// SIZE: error: rtx-add-mesh: bad mesh axis 'tp:0'; expected name:size, e.g. mesh=dp:2,tp:2
// AGAIN: error: rtx-add-mesh: the module already has a mesh
// EMPTY: error: rtx-add-mesh: mesh='' names no axis; expected name:size, e.g. mesh=dp:2,tp:2
// COMMA: error: rtx-add-mesh: mesh=',' names no axis
// 2^64 ranks wrap to 0 in int64 arithmetic.
// RANKS: error: rtx-add-mesh: mesh=dp:65536,tp:65536,pp:65536,sp:65536 has more ranks than int64 can count (the product of the axis sizes overflows)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
