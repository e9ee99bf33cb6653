// When the threads of the simulated ranks run out, rtx-run says so, stops
// the ranks that started, and exits non-zero (it used to abort with
// "terminate called without an active exception"). A virtual-memory limit
// makes thread stacks run out after a few dozen ranks (as root, a process
// limit would not apply). ASan's shadow memory needs more address space
// than that limit allows, so the sanitizer stage skips it.
//
// UNSUPPORTED: asan
// RUN: sh -c 'ulimit -v 2500000; rtx-run %s --random --ranks 1024; echo "exit $?"' 2>&1 | FileCheck %s
// CHECK: rtx-run: error: cannot start simulated rank {{[0-9]+}} of 1024: Resource temporarily unavailable (fewer --ranks, or raise the thread limit)
// CHECK: exit 1

rtx.mesh @mesh_dp1024 ["dp"=1024]
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = rtx.all_reduce %x on @mesh_dp1024 ["dp"] sum : tensor<2xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}
