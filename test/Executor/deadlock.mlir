// Every rank waits to receive from rank 0 and nobody sends: rtx-run must
// report the deadlock, naming what each rank waits on, and exit non-zero
// instead of hanging.
//
// RUN: not rtx-run %s --ranks 2 --random --timeout 30 2>&1 | FileCheck %s
// CHECK: rtx-run: error: deadlock: no rank can make progress
// CHECK-DAG: rank 0: waits in rtx.recv over ["pp"] at {{.*}}deadlock.mlir:12
// CHECK-DAG: rank 1: waits in rtx.recv over ["pp"] at {{.*}}deadlock.mlir:12

rtx.mesh @mesh_pp2 ["pp"=2]
func.func @main() -> tensor<4xf32> {
  %x = rtx.recv from @mesh_pp2 ["pp"] peer 0 tag 0 : tensor<4xf32>
  return %x : tensor<4xf32>
}
