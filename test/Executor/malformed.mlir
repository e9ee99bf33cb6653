// Malformed IR gives a located parse diagnostic and exit code 1.
//
// RUN: not rtx-run %s 2>&1 | FileCheck %s
// CHECK: malformed.mlir:[[@LINE+3]]:{{[0-9]+}}: error:

func.func @main() -> tensor<4xf32> {
  %x = rtx.relu : tensor<4xf32>
  return %x : tensor<4xf32>
}
