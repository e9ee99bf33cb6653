// The GPT-2 block example parses, verifies, and round-trips through both the
// custom and the generic form unchanged.
//
// RUN: rtx-opt %rtx_src_root/examples/gpt2-block.mlir > %t.custom.mlir
// RUN: rtx-opt %rtx_src_root/examples/gpt2-block.mlir -mlir-print-op-generic \
// RUN:   | rtx-opt > %t.generic.mlir
// RUN: diff %t.custom.mlir %t.generic.mlir
// RUN: rtx-opt %t.custom.mlir | diff %t.custom.mlir -
// RUN: FileCheck %s < %t.custom.mlir
// RUN: grep -c "rtx.param" %t.custom.mlir | FileCheck %s --check-prefix=PARAMS

// CHECK-LABEL: func.func @gpt2_block
// CHECK: rtx.layernorm
// CHECK: rtx.attention %{{.*}} causal
// CHECK: rtx.layernorm
// CHECK: rtx.gelu %{{.*}} approximate
// PARAMS: 12
