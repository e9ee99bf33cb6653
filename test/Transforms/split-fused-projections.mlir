// RUN: rtx-opt %s -split-input-file -verify-diagnostics -rtx-split-fused-projections | FileCheck %s

// nanoGPT's c_attn: one linear to q | k | v side by side, then split(C).
// It becomes three linears over blocks of the user's weight and bias, each
// named NAME@k with the block it is in rtx.part_of.
// CHECK-LABEL: func.func @nanogpt
// CHECK-DAG: %[[W0:.*]] = rtx.param "attn.c_attn.weight@0" normal(0.000000e+00, 2.000000e-02) {rtx.part_of = {dim = 0 : i64, name = "attn.c_attn.weight", offset = 0 : i64, size = 48 : i64}} : tensor<16x16xf32>
// CHECK-DAG: %[[B0:.*]] = rtx.param "attn.c_attn.bias@0" zeros {rtx.part_of = {dim = 0 : i64, name = "attn.c_attn.bias", offset = 0 : i64, size = 48 : i64}} : tensor<16xf32>
// CHECK-DAG: rtx.param "attn.c_attn.weight@1" {{.*}}offset = 16 : i64{{.*}} : tensor<16x16xf32>
// CHECK-DAG: rtx.param "attn.c_attn.weight@2" {{.*}}offset = 32 : i64{{.*}} : tensor<16x16xf32>
// CHECK: %[[Q:.*]] = rtx.linear %{{.*}}, %[[W0]], %[[B0]] : tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
// CHECK-NOT: rtx.split
// CHECK: rtx.reshape %[[Q]] : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
// CHECK-NOT: "attn.c_attn.weight"
func.func @nanogpt(%x: tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32> {
  %w = rtx.param "attn.c_attn.weight" normal(0.0, 0.02) : tensor<48x16xf32>
  %b = rtx.param "attn.c_attn.bias" zeros : tensor<48xf32>
  %qkv = rtx.linear %x, %w, %b : tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32> -> tensor<2x8x48xf32>
  %q, %k, %v = rtx.split %qkv dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %qh = rtx.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %kh = rtx.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %vh = rtx.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %s = rtx.add %qh, %kh : tensor<2x8x4x4xf32>
  %r = rtx.add %s, %vh : tensor<2x8x4x4xf32>
  return %r : tensor<2x8x4x4xf32>
}

// -----

// GPT-2's Conv1D: x[BT, C] @ W[C, 3C] + broadcast(bias), viewed [B, T, 3C],
// then split. The weight's parts are column blocks (dim 1).
// CHECK-LABEL: func.func @conv1d
// CHECK-DAG: rtx.param "c_attn.weight@1" {{.*}}{rtx.part_of = {dim = 1 : i64, name = "c_attn.weight", offset = 16 : i64, size = 48 : i64}} : tensor<16x16xf32>
// CHECK-DAG: rtx.param "c_attn.bias@2" {{.*}}offset = 32 : i64{{.*}} : tensor<16xf32>
// CHECK: rtx.matmul %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
// CHECK: rtx.broadcast %{{.*}} dims [1] : tensor<16xf32> -> tensor<16x16xf32>
// CHECK: rtx.reshape %{{.*}} : tensor<16x16xf32> -> tensor<2x8x16xf32>
// CHECK-NOT: rtx.split
func.func @conv1d(%x: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %w = rtx.param "c_attn.weight" normal(0.0, 0.02) : tensor<16x48xf32>
  %b = rtx.param "c_attn.bias" zeros : tensor<48xf32>
  %m = rtx.matmul %x, %w : tensor<16x16xf32>, tensor<16x48xf32> -> tensor<16x48xf32>
  %bb = rtx.broadcast %b dims [1] : tensor<48xf32> -> tensor<16x48xf32>
  %a = rtx.add %m, %bb : tensor<16x48xf32>
  %r = rtx.reshape %a : tensor<16x48xf32> -> tensor<2x8x48xf32>
  %q, %k, %v = rtx.split %r dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %s = rtx.add %q, %k : tensor<2x8x16xf32>
  %t = rtx.add %s, %v : tensor<2x8x16xf32>
  return %t : tensor<2x8x16xf32>
}

// -----

// timm's ViT: reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4), then unbind(0)
// (a split of dimension 0 and reshapes). The parts are the major factor of
// the features, which the reshape makes dimension 2 and the permutation 0.
// CHECK-LABEL: func.func @vit
// CHECK: rtx.linear %{{.*}} -> tensor<2x5x12xf32>
// CHECK: rtx.reshape %{{.*}} : tensor<2x5x12xf32> -> tensor<2x5x1x3x4xf32>
// CHECK: rtx.transpose %{{.*}} [2, 0, 3, 1, 4] : tensor<2x5x1x3x4xf32> -> tensor<1x2x3x5x4xf32>
// CHECK-NOT: rtx.split
func.func @vit(%x: tensor<2x5x12xf32>) -> tensor<1x2x3x5x4xf32> {
  %w = rtx.param "qkv.weight" normal(0.0, 0.02) : tensor<36x12xf32>
  %y = rtx.linear %x, %w : tensor<2x5x12xf32>, tensor<36x12xf32> -> tensor<2x5x36xf32>
  %r = rtx.reshape %y : tensor<2x5x36xf32> -> tensor<2x5x3x3x4xf32>
  %t = rtx.transpose %r [2, 0, 3, 1, 4] : tensor<2x5x3x3x4xf32> -> tensor<3x2x3x5x4xf32>
  %q, %k, %v = rtx.split %t dim 0 : tensor<3x2x3x5x4xf32> -> tensor<1x2x3x5x4xf32>, tensor<1x2x3x5x4xf32>, tensor<1x2x3x5x4xf32>
  %s = rtx.add %q, %k : tensor<1x2x3x5x4xf32>
  %u = rtx.add %s, %v : tensor<1x2x3x5x4xf32>
  return %u : tensor<1x2x3x5x4xf32>
}

// -----

// Left fused: a weight used twice (tied), and parts of unequal size.
// CHECK-LABEL: func.func @kept
// CHECK: rtx.param "tied"
// CHECK: rtx.split
// CHECK: rtx.param "uneven"
// CHECK: rtx.split
func.func @kept(%x: tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x48xf32>, tensor<2x8xf32>) {
  %w = rtx.param "tied" normal(0.0, 0.02) : tensor<48x16xf32>
  %y = rtx.linear %x, %w : tensor<2x16xf32>, tensor<48x16xf32> -> tensor<2x48xf32>
  %a, %b, %c = rtx.split %y dim 1 : tensor<2x48xf32> -> tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
  %z = rtx.linear %x, %w : tensor<2x16xf32>, tensor<48x16xf32> -> tensor<2x48xf32>
  %u = rtx.param "uneven" normal(0.0, 0.02) : tensor<24x16xf32>
  %v = rtx.linear %x, %u : tensor<2x16xf32>, tensor<24x16xf32> -> tensor<2x24xf32>
  %p, %q = rtx.split %v dim 1 : tensor<2x24xf32> -> tensor<2x16xf32>, tensor<2x8xf32>
  return %a, %z, %q : tensor<2x16xf32>, tensor<2x48xf32>, tensor<2x8xf32>
}
