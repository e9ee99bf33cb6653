// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// rtx.attention: multi-head, grouped key/value heads, multi-query, causal,
// explicit scale.

// CHECK-LABEL: func.func @attention_multi_head
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x13x64xf32>, %[[K:[^:]*]]: tensor<2x8x13x64xf32>, %[[V:[^:]*]]: tensor<2x8x13x64xf32>)
// CHECK: %[[O:.*]] = rtx.attention %[[Q]], %[[K]], %[[V]] : tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x13x64xf32>
// CHECK: return %[[O]]
func.func @attention_multi_head(%q: tensor<2x8x13x64xf32>, %k: tensor<2x8x13x64xf32>, %v: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  %o = rtx.attention %q, %k, %v : tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32>, tensor<2x8x13x64xf32> -> tensor<2x8x13x64xf32>
  return %o : tensor<2x8x13x64xf32>
}

// -----

// CHECK-LABEL: func.func @attention_grouped_kv_causal
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x16x64xf32>, %[[K:[^:]*]]: tensor<2x2x16x64xf32>, %[[V:[^:]*]]: tensor<2x2x16x64xf32>)
// CHECK: rtx.attention %[[Q]], %[[K]], %[[V]] causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32> -> tensor<2x8x16x64xf32>
func.func @attention_grouped_kv_causal(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x64xf32>) -> tensor<2x8x16x64xf32> {
  %o = rtx.attention %q, %k, %v causal : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32> -> tensor<2x8x16x64xf32>
  return %o : tensor<2x8x16x64xf32>
}

// -----

// Multi-query attention (one key/value head), query and key sequences of
// different lengths (not causal).
// CHECK-LABEL: func.func @attention_multi_query_cross
// CHECK: rtx.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x7x5x16xbf16>, tensor<3x1x13x16xbf16>, tensor<3x1x13x16xbf16> -> tensor<3x7x5x16xbf16>
func.func @attention_multi_query_cross(%q: tensor<3x7x5x16xbf16>, %k: tensor<3x1x13x16xbf16>, %v: tensor<3x1x13x16xbf16>) -> tensor<3x7x5x16xbf16> {
  %o = rtx.attention %q, %k, %v : tensor<3x7x5x16xbf16>, tensor<3x1x13x16xbf16>, tensor<3x1x13x16xbf16> -> tensor<3x7x5x16xbf16>
  return %o : tensor<3x7x5x16xbf16>
}

// -----

// CHECK-LABEL: func.func @attention_scale
// CHECK: rtx.attention %{{.*}}, %{{.*}}, %{{.*}} scale 1.250000e-01 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32> -> tensor<1x4x13x64xf32>
func.func @attention_scale(%q: tensor<1x4x13x64xf32>, %k: tensor<1x4x13x64xf32>, %v: tensor<1x4x13x64xf32>) -> tensor<1x4x13x64xf32> {
  %o = rtx.attention %q, %k, %v scale 0.125 : tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32>, tensor<1x4x13x64xf32> -> tensor<1x4x13x64xf32>
  return %o : tensor<1x4x13x64xf32>
}

// -----

// CHECK-LABEL: func.func @attention_causal_scale
// CHECK: rtx.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<1x6x13x4xf16>, tensor<1x3x13x4xf16>, tensor<1x3x13x4xf16> -> tensor<1x6x13x4xf16>
func.func @attention_causal_scale(%q: tensor<1x6x13x4xf16>, %k: tensor<1x3x13x4xf16>, %v: tensor<1x3x13x4xf16>) -> tensor<1x6x13x4xf16> {
  %o = rtx.attention %q, %k, %v causal scale 0.5 : tensor<1x6x13x4xf16>, tensor<1x3x13x4xf16>, tensor<1x3x13x4xf16> -> tensor<1x6x13x4xf16>
  return %o : tensor<1x6x13x4xf16>
}
