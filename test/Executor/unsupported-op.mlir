// An op rtx-run cannot execute is reported with its name and location.
//
// RUN: not rtx-run %s --random 2>&1 | FileCheck %s
// CHECK: rtx-run: error: rank 0: op 'func.call' at {{.*}}unsupported-op.mlir:10:8: rtx-run does not support this op

func.func private @helper(tensor<4xf32>) -> tensor<4xf32>

func.func @main() -> tensor<4xf32> {
  %x = rtx.input "x" : tensor<4xf32>
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
