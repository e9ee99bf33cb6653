// RUN: rtx-opt %s | FileCheck %s
// RUN: rtx-opt %s -mlir-print-op-generic | rtx-opt | FileCheck %s

// rtx.offload_fetch_start and rtx.offload_store round trip: an offloaded
// buffer (an argument marked rtx.offload) is read through a token and its
// new value goes back to the tier; the step returns the reference.

// CHECK-LABEL: func.func @adam_moment_offloaded
// CHECK-SAME: %[[M:[^:]*]]: tensor<1030xf32> {rtx.offload = "nvme", rtx.state = "flat0:root:exp_avg"}
// CHECK: %[[T:.*]] = rtx.offload_fetch_start %[[M]] : tensor<1030xf32> -> !rtx.token<tensor<1030xf32>>
// CHECK: %[[V:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<1030xf32>> -> tensor<1030xf32>
// CHECK: %[[N:.*]] = rtx.add %[[V]], %{{.*}} : tensor<1030xf32>
// CHECK: %[[R:.*]] = rtx.offload_store %[[N]] into %[[M]] : tensor<1030xf32>
// CHECK: return %[[R]] : tensor<1030xf32>
func.func @adam_moment_offloaded(%m: tensor<1030xf32> {rtx.offload = "nvme", rtx.state = "flat0:root:exp_avg"},
                                 %g: tensor<1030xf32>)
    -> (tensor<1030xf32> {rtx.offload = "nvme", rtx.state = "flat0:root:exp_avg"}) {
  %t = rtx.offload_fetch_start %m : tensor<1030xf32> -> !rtx.token<tensor<1030xf32>>
  %v = rtx.wait %t : !rtx.token<tensor<1030xf32>> -> tensor<1030xf32>
  %n = rtx.add %v, %g : tensor<1030xf32>
  %r = rtx.offload_store %n into %m : tensor<1030xf32>
  return %r : tensor<1030xf32>
}
