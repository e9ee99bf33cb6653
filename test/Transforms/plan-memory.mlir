// rtx-plan-memory: the static peak per rank, checked by hand. The batch is
// held all step (x: 4096 bytes; y: 20 bytes, a 64-byte granule); a view
// (rtx.reshape) adds nothing and keeps its source alive; a started
// collective's result counts from its start; a reduce-scatter on Gloo's
// ring holds a copy of its input while it runs (16384 bytes); each tensor
// dies at its last use.
//
// RUN: rtx-opt %s '-rtx-plan-memory=report-file=%t.json' -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: not rtx-opt %s '-rtx-plan-memory=report-file=%t.missing/x.json' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADFILE
//
// At the reduce-scatter: x 4096 + y 64 + a 4096 + b 4096 (activations),
// g 16384 + r 4096 + the workspace 16384 (communication) = 49216.
// CHECK: remark: peak memory per rank of 'step': 49216 bytes (4160 held by the arguments), reached at rtx.reduce_scatter
// CHECK-NEXT: kind
// CHECK-NEXT: parameters 0
// CHECK-NEXT: gradients 0
// CHECK-NEXT: optimizer_state 0
// CHECK-NEXT: activations 12352
// CHECK-NEXT: communication 36864
// CHECK-NEXT: temporaries 0
// CHECK-NEXT: peak 49216
//
// (llvm::json writes keys in order)
// JSON: "argument_bytes": 4160
// JSON: "activations": 12352
// JSON: "communication": 36864
// JSON: "name": "step"
// JSON: "peak_bytes": 49216
// JSON: "peak_op": "rtx.reduce_scatter"
//
// BADFILE: error: rtx-plan-memory: cannot write report-file '{{.*}}x.json'

rtx.mesh @mesh ["dp"=4]
func.func @step() -> tensor<f32> {
  %x = rtx.input "x" : tensor<1024xf32>
  %y = rtx.input "y" : tensor<5xf32>
  %a = rtx.exp %x : tensor<1024xf32>
  %v = rtx.reshape %a : tensor<1024xf32> -> tensor<32x32xf32>
  %t = rtx.all_gather_start %x on @mesh ["dp"] dim 0 : tensor<1024xf32> -> !rtx.token<tensor<4096xf32>>
  %b = rtx.exp %v : tensor<32x32xf32>
  %g = rtx.wait %t : !rtx.token<tensor<4096xf32>> -> tensor<4096xf32>
  %r = rtx.reduce_scatter %g on @mesh ["dp"] sum dim 0 : tensor<4096xf32> -> tensor<1024xf32>
  %s = rtx.add %r, %a : tensor<1024xf32>
  %l = rtx.reduce sum %s dims [0] : tensor<1024xf32> -> tensor<f32>
  %l2 = rtx.reduce sum %b dims [0, 1] : tensor<32x32xf32> -> tensor<f32>
  %ly = rtx.reduce sum %y dims [0] : tensor<5xf32> -> tensor<f32>
  %l3 = rtx.add %l, %l2 : tensor<f32>
  %loss = rtx.add %l3, %ly : tensor<f32>
  return %loss : tensor<f32>
}
