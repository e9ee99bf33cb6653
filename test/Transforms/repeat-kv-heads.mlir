// RUN: rtx-opt %s -split-input-file -rtx-repeat-kv-heads | FileCheck %s

// 4 query heads, 2 key/value heads on tp=4: the keys and values are
// repeated to 4 heads (head h reads key/value head h / 2, as rtx.attention
// pairs them), so tp splits the attention by query head.
// CHECK-LABEL: func.func @gqa
// CHECK: %[[K1:.*]] = rtx.reshape %arg1 : tensor<2x2x8x16xf32> -> tensor<2x2x1x8x16xf32>
// CHECK: %[[K2:.*]] = rtx.broadcast %[[K1]] dims [0, 1, 2, 3, 4] : tensor<2x2x1x8x16xf32> -> tensor<2x2x2x8x16xf32>
// CHECK: %[[K:.*]] = rtx.reshape %[[K2]] : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: %[[V:.*]] = rtx.reshape %{{.*}} : tensor<2x2x2x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: rtx.attention %arg0, %[[K]], %[[V]] causal : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
rtx.mesh @mesh_tp4 ["tp"=4]

func.func @gqa(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %o = rtx.attention %q, %k, %v causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// tp=2 divides the 2 key/value heads: nothing to do.
// CHECK-LABEL: func.func @divides
// CHECK-NOT: rtx.broadcast
// CHECK: rtx.attention %arg0, %arg1, %arg2 causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
rtx.mesh @mesh_tp2 ["tp"=2]

func.func @divides(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %o = rtx.attention %q, %k, %v causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
