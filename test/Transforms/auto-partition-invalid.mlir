// Bad options and profiles are refused with the field or the option named;
// a model that no plan fits says how much memory is missing and what would
// change it.
// RUN: not rtx-opt %s -rtx-auto-partition=devices=2 -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=NOPROFILE
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=0' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=DEVICES
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=2 objective=fastest' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=OBJECTIVE
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=2 memory-margin=1.5' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=4 tp=3' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=no-such-profile devices=2' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=%S/Inputs/profile-missing-memory.json devices=2' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=%S/Inputs/profile-unknown-link.json devices=2' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=LINK
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=%S/Inputs/profile-tiny-memory.json devices=2' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=MEMORY
// RUN: not rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=2 global-batch=3' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=BATCH
// RUN: not rtx-opt %s '-rtx-distribute=from-plan=true' -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=NOPLAN

// NOPROFILE: error: rtx-auto-partition: profile= is required: a built-in profile (cpu-host, dgx-a100, dgx-h100, hgx-h200, pcie-l40s-8) or a file
// DEVICES: error: rtx-auto-partition: devices=0 must be at least 1
// OBJECTIVE: error: rtx-auto-partition: objective='fastest' is not one of throughput, memory, compute-balanced, communication, hybrid, tp-first, pp-first
// MARGIN: error: rtx-auto-partition: memory-margin=1.50 must be in [0, 1)
// DIVIDE: error: rtx-auto-partition: tp=3 does not divide devices=4
// UNKNOWN: error: rtx-auto-partition: hardware profile 'no-such-profile' is neither a built-in profile (cpu-host, dgx-a100, dgx-h100, hgx-h200, pcie-l40s-8) nor a readable file
// FIELD: error: rtx-auto-partition: hardware profile '{{.*}}profile-missing-memory.json': device.memory_bytes: missing
// LINK: error: rtx-auto-partition: hardware profile '{{.*}}profile-unknown-link.json': intra_node[0][1]: expected the name of a class of link_classes
// MEMORY: error: rtx-auto-partition: no plan of 2 devices fits in memory on 'tiny-memory': the plan that needs the least ({{.*}}) needs {{[0-9.]+}} KiB per rank (parameters {{.*}}), {{[0-9.]+}} KiB more than the limit of 3.6 KiB (4.0 KiB less memory-margin 0.10); it exceeds the device's 4.0 KiB even without a margin: use more devices (about {{[0-9]+}}), or a device with more memory
// BATCH: error: rtx-auto-partition: global-batch=3 is not a multiple of the model's batch of 2 sequences
// NOPLAN: error: rtx-distribute: from-plan=true needs the module's 'rtx.plan' (run rtx-auto-partition first)

func.func @mlp() -> tensor<f32> {
  %x = rtx.input "x" : tensor<2x16xf32>
  %labels = rtx.input "labels" : tensor<2xi32>
  %w1 = rtx.param "fc1.weight" normal(0.0, 0.1) : tensor<32x16xf32>
  %h = rtx.linear %x, %w1 : tensor<2x16xf32>, tensor<32x16xf32> -> tensor<2x32xf32>
  %a = rtx.gelu %h : tensor<2x32xf32>
  %w2 = rtx.param "fc2.weight" normal(0.0, 0.1) : tensor<10x32xf32>
  %z = rtx.linear %a, %w2 : tensor<2x32xf32>, tensor<10x32xf32> -> tensor<2x10xf32>
  %loss = rtx.cross_entropy %z, %labels : tensor<2x10xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
