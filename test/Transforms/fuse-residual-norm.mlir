// RUN: rtx-opt %s -split-input-file -rtx-fuse-residual-norm | FileCheck %s

// A residual add feeding a layernorm: one op returns the sum (still used by
// the next residual add) and the normalised value.
// CHECK-LABEL: func.func @pre_norm_block
func.func @pre_norm_block(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>,
                          %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[S:.*]], %[[Y:.*]] = rtx.add_layernorm %arg0, %arg1, %arg2, %arg3 eps 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK-NOT: rtx.layernorm
  // CHECK: %[[N:.*]] = rtx.add %[[S]], %[[Y]]
  // CHECK: return %[[S]], %[[N]]
  %h = rtx.add %x, %r : tensor<4x8xf32>
  %y = rtx.layernorm %h, %g, %b eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %n = rtx.add %h, %y : tensor<4x8xf32>
  return %h, %n : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// RMSNorm (Llama), bf16.
// CHECK-LABEL: func.func @rms
func.func @rms(%x: tensor<2x3x16xbf16>, %r: tensor<2x3x16xbf16>,
               %g: tensor<16xbf16>) -> tensor<2x3x16xbf16> {
  // CHECK: %{{.*}}, %[[Y:.*]] = rtx.add_rmsnorm %arg0, %arg1, %arg2 eps {{.*}} : tensor<2x3x16xbf16>, tensor<16xbf16>
  // CHECK-NOT: rtx.rmsnorm
  // CHECK: return %[[Y]]
  %h = rtx.add %x, %r : tensor<2x3x16xbf16>
  %y = rtx.rmsnorm %h, %g eps 1.0e-06 : tensor<2x3x16xbf16>, tensor<16xbf16>
  return %y : tensor<2x3x16xbf16>
}

// -----

// The sum is used before the norm, and the norm's scale is computed after
// the add: the fused op has no place, so nothing changes.
// CHECK-LABEL: func.func @no_place
func.func @no_place(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>,
                    %g0: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: rtx.add %arg0, %arg1
  // CHECK: rtx.layernorm
  // CHECK-NOT: rtx.add_layernorm
  %h = rtx.add %x, %r : tensor<4x8xf32>
  %e = rtx.exp %h : tensor<4x8xf32>
  %g = rtx.exp %g0 : tensor<8xf32>
  %y = rtx.layernorm %h, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  %z = rtx.add %e, %y : tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// A norm of something else than an add stays.
// CHECK-LABEL: func.func @not_an_add
func.func @not_an_add(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: rtx.layernorm %arg0
  // CHECK-NOT: rtx.add_layernorm
  %y = rtx.layernorm %x, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A partitioned per-rank program (tp=2, Megatron's row-parallel output
// all-reduced, then the residual add and the norm): only local ops are
// rewritten; the collective stays, and the shardings follow the results.
rtx.mesh @mesh_tp2 ["tp"=2]
// CHECK-LABEL: func.func @partitioned
func.func @partitioned(%p: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>)
    -> tensor<4x8xf32> {
  // CHECK: %[[A:.*]] = rtx.all_reduce %arg0 on @mesh_tp2 ["tp"] sum
  // CHECK: rtx.add_layernorm %[[A]], %arg1, %arg2 eps 1.000000e-05 {rtx.sharding = [#rtx.sharding<@mesh_tp2, {{.*}}>, #rtx.sharding<@mesh_tp2, {{.*}}>]}
  %a = rtx.all_reduce %p on @mesh_tp2 ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %h = rtx.add %a, %r {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<4x8xf32>
  %y = rtx.layernorm %h, %g eps 1.0e-05 {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []]>} : tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
