// RUN: not rtx-opt %s '-rtx-bucket-collectives=bucket-bytes=-5' 2>&1 | FileCheck %s
// CHECK: error: bucket-bytes must be at least 0, got -5
func.func @f() {
  return
}
