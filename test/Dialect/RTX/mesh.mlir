// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// CHECK-LABEL: rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// -----

// CHECK-LABEL: rtx.mesh @mesh_single []
rtx.mesh @mesh_single []

// -----

// CHECK-LABEL: rtx.mesh @mesh_dp2_tp2_sp2 ["dp"=2, "tp"=2, "sp"=2]
rtx.mesh @mesh_dp2_tp2_sp2 ["dp"=2, "tp"=2, "sp"=2]
