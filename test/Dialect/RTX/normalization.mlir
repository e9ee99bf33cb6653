// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Normalisation and friends: rtx.layernorm, rtx.rmsnorm, rtx.softmax, rtx.rope.

// CHECK-LABEL: func.func @layernorm_with_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13x768xf32>, %[[G:[^:]*]]: tensor<768xf32>, %[[B:[^:]*]]: tensor<768xf32>)
// CHECK: %[[Y:.*]] = rtx.layernorm %[[X]], %[[G]], %[[B]] eps 1.000000e-05 : tensor<8x13x768xf32>, tensor<768xf32>, tensor<768xf32>
// CHECK: return %[[Y]]
func.func @layernorm_with_bias(%x: tensor<8x13x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<8x13x768xf32> {
  %y = rtx.layernorm %x, %g, %b eps 1.0e-05 : tensor<8x13x768xf32>, tensor<768xf32>, tensor<768xf32>
  return %y : tensor<8x13x768xf32>
}

// -----

// CHECK-LABEL: func.func @layernorm_without_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x65xbf16>, %[[G:[^:]*]]: tensor<65xbf16>)
// CHECK: %[[Y:.*]] = rtx.layernorm %[[X]], %[[G]] eps 1.000000e-05 : tensor<7x65xbf16>, tensor<65xbf16>
func.func @layernorm_without_bias(%x: tensor<7x65xbf16>, %g: tensor<65xbf16>) -> tensor<7x65xbf16> {
  %y = rtx.layernorm %x, %g eps 1.0e-05 : tensor<7x65xbf16>, tensor<65xbf16>
  return %y : tensor<7x65xbf16>
}

// -----

// Rank 1 input and a zero epsilon are both allowed.
// CHECK-LABEL: func.func @layernorm_vector_zero_eps
// CHECK: rtx.layernorm %{{.*}}, %{{.*}}, %{{.*}} eps 0.000000e+00 : tensor<13xf64>, tensor<13xf64>, tensor<13xf64>
func.func @layernorm_vector_zero_eps(%x: tensor<13xf64>, %g: tensor<13xf64>, %b: tensor<13xf64>) -> tensor<13xf64> {
  %y = rtx.layernorm %x, %g, %b eps 0.0 : tensor<13xf64>, tensor<13xf64>, tensor<13xf64>
  return %y : tensor<13xf64>
}

// -----

// CHECK-LABEL: func.func @rmsnorm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x13x64xf32>, %[[G:[^:]*]]: tensor<64xf32>)
// 1e-6 is not exact in binary: it prints with all its digits.
// CHECK: %[[Y:.*]] = rtx.rmsnorm %[[X]], %[[G]] eps 9.9999999999999995E-7 : tensor<2x13x64xf32>, tensor<64xf32>
// CHECK: return %[[Y]]
func.func @rmsnorm(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) -> tensor<2x13x64xf32> {
  %y = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf32>
  return %y : tensor<2x13x64xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_dims
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x12x13x13xf32>)
// CHECK: %[[A:.*]] = rtx.softmax %[[X]] dim 3 : tensor<2x12x13x13xf32>
// CHECK: %[[B:.*]] = rtx.softmax %[[A]] dim 0 : tensor<2x12x13x13xf32>
// CHECK: return %[[B]]
func.func @softmax_dims(%x: tensor<2x12x13x13xf32>) -> tensor<2x12x13x13xf32> {
  %0 = rtx.softmax %x dim 3 : tensor<2x12x13x13xf32>
  %1 = rtx.softmax %0 dim 0 : tensor<2x12x13x13xf32>
  return %1 : tensor<2x12x13x13xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_vector_f16
// CHECK: rtx.softmax %{{.*}} dim 0 : tensor<65xf16>
func.func @softmax_vector_f16(%x: tensor<65xf16>) -> tensor<65xf16> {
  %0 = rtx.softmax %x dim 0 : tensor<65xf16>
  return %0 : tensor<65xf16>
}

// -----

// CHECK-LABEL: func.func @rope_default_offset
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x13x64xf32>)
// CHECK: %[[R:.*]] = rtx.rope %[[Q]] theta 1.000000e+04 : tensor<2x8x13x64xf32>
// CHECK: return %[[R]]
func.func @rope_default_offset(%q: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  %0 = rtx.rope %q theta 1.0e+04 : tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

// The offset is printed in the attribute dictionary, and only when it is not
// the default 0.
// CHECK-LABEL: func.func @rope_offset
// CHECK: rtx.rope %{{.*}} theta 5.000000e+05 {offset = 7 : i64} : tensor<1x4x13x2xbf16>
// CHECK: rtx.rope %{{.*}} theta 5.000000e+05 : tensor<1x4x13x2xbf16>
func.func @rope_offset(%q: tensor<1x4x13x2xbf16>) -> (tensor<1x4x13x2xbf16>, tensor<1x4x13x2xbf16>) {
  %0 = rtx.rope %q theta 5.0e+05 {offset = 7 : i64} : tensor<1x4x13x2xbf16>
  %1 = rtx.rope %q theta 5.0e+05 {offset = 0 : i64} : tensor<1x4x13x2xbf16>
  return %0, %1 : tensor<1x4x13x2xbf16>, tensor<1x4x13x2xbf16>
}
