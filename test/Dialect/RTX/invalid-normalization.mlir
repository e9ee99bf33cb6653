// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.layernorm, rtx.rmsnorm, rtx.softmax, rtx.rope.

func.func @layernorm_scalar_input(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.layernorm' op input must have rank at least 1}}
  %0 = rtx.layernorm %x, %g eps 1.0e-05 : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

func.func @layernorm_negative_epsilon(%x: tensor<7x65xf32>, %g: tensor<65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.layernorm' op epsilon must be non-negative, got -1.000000e-05}}
  %0 = rtx.layernorm %x, %g eps -1.0e-05 : tensor<7x65xf32>, tensor<65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @layernorm_nan_epsilon(%x: tensor<7x65xf32>, %g: tensor<65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.layernorm' op epsilon must be non-negative, got nan}}
  %0 = rtx.layernorm %x, %g eps 0x7FF8000000000000 : tensor<7x65xf32>, tensor<65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @layernorm_scale_shape(%x: tensor<7x65xf32>, %g: tensor<7xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.layernorm' op scale shape [7] must be [65], the input's last dimension}}
  %0 = rtx.layernorm %x, %g eps 1.0e-05 : tensor<7x65xf32>, tensor<7xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @layernorm_bias_shape(%x: tensor<7x65xf32>, %g: tensor<65xf32>, %b: tensor<1x65xf32>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.layernorm' op bias shape [1, 65] must be [65], the input's last dimension}}
  %0 = rtx.layernorm %x, %g, %b eps 1.0e-05 : tensor<7x65xf32>, tensor<65xf32>, tensor<1x65xf32>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @layernorm_scale_element_type(%x: tensor<7x65xf32>, %g: tensor<65xbf16>) -> tensor<7x65xf32> {
  // expected-error @+1 {{'rtx.layernorm' op input element type 'f32' differs from scale element type 'bf16'}}
  %0 = rtx.layernorm %x, %g eps 1.0e-05 : tensor<7x65xf32>, tensor<65xbf16>
  return %0 : tensor<7x65xf32>
}

// -----

func.func @layernorm_bias_element_type(%x: tensor<7x65xbf16>, %g: tensor<65xbf16>, %b: tensor<65xf32>) -> tensor<7x65xbf16> {
  // expected-error @+1 {{'rtx.layernorm' op input element type 'bf16' differs from bias element type 'f32'}}
  %0 = rtx.layernorm %x, %g, %b eps 1.0e-05 : tensor<7x65xbf16>, tensor<65xbf16>, tensor<65xf32>
  return %0 : tensor<7x65xbf16>
}

// -----

func.func @layernorm_result_type(%x: tensor<7x65xf32>, %g: tensor<65xf32>) -> tensor<7x65xbf16> {
  // expected-error @+1 {{'rtx.layernorm' op failed to verify that all of {input, result} have same type}}
  %0 = "rtx.layernorm"(%x, %g) <{epsilon = 1.0e-05 : f64}> : (tensor<7x65xf32>, tensor<65xf32>) -> tensor<7x65xbf16>
  return %0 : tensor<7x65xbf16>
}

// -----

func.func @layernorm_integer_input(%x: tensor<7x65xi32>, %g: tensor<65xi32>) -> tensor<7x65xi32> {
  // expected-error @+1 {{'rtx.layernorm' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7x65xi32>'}}
  %0 = rtx.layernorm %x, %g eps 1.0e-05 : tensor<7x65xi32>, tensor<65xi32>
  return %0 : tensor<7x65xi32>
}

// -----

func.func @rmsnorm_scalar_input(%x: tensor<f16>, %g: tensor<1xf16>) -> tensor<f16> {
  // expected-error @+1 {{'rtx.rmsnorm' op input must have rank at least 1}}
  %0 = rtx.rmsnorm %x, %g eps 1.0e-05 : tensor<f16>, tensor<1xf16>
  return %0 : tensor<f16>
}

// -----

func.func @rmsnorm_negative_epsilon(%x: tensor<2x13x64xf32>, %g: tensor<64xf32>) -> tensor<2x13x64xf32> {
  // expected-error @+1 {{'rtx.rmsnorm' op epsilon must be non-negative, got -5.000000e-01}}
  %0 = rtx.rmsnorm %x, %g eps -0.5 : tensor<2x13x64xf32>, tensor<64xf32>
  return %0 : tensor<2x13x64xf32>
}

// -----

func.func @rmsnorm_scale_shape(%x: tensor<2x13x64xf32>, %g: tensor<13xf32>) -> tensor<2x13x64xf32> {
  // expected-error @+1 {{'rtx.rmsnorm' op scale shape [13] must be [64], the input's last dimension}}
  %0 = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<2x13x64xf32>, tensor<13xf32>
  return %0 : tensor<2x13x64xf32>
}

// -----

func.func @rmsnorm_scale_element_type(%x: tensor<2x13x64xf32>, %g: tensor<64xf64>) -> tensor<2x13x64xf32> {
  // expected-error @+1 {{'rtx.rmsnorm' op input element type 'f32' differs from scale element type 'f64'}}
  %0 = rtx.rmsnorm %x, %g eps 1.0e-06 : tensor<2x13x64xf32>, tensor<64xf64>
  return %0 : tensor<2x13x64xf32>
}

// -----

func.func @softmax_dim_out_of_range(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.softmax' op dim 2 is out of range for a tensor of rank 2}}
  %0 = rtx.softmax %x dim 2 : tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @softmax_negative_dim(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.softmax' op dim -1 is out of range for a tensor of rank 2}}
  %0 = rtx.softmax %x dim -1 : tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @softmax_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'rtx.softmax' op dim 0 is out of range for a tensor of rank 0}}
  %0 = rtx.softmax %x dim 0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_result_type(%x: tensor<7x13xf32>) -> tensor<7x13xf16> {
  // expected-error @+1 {{'rtx.softmax' op requires the same type for all operands and results}}
  %0 = "rtx.softmax"(%x) <{dim = 1 : i64}> : (tensor<7x13xf32>) -> tensor<7x13xf16>
  return %0 : tensor<7x13xf16>
}

// -----

func.func @rope_rank3(%x: tensor<2x13x64xf32>) -> tensor<2x13x64xf32> {
  // expected-error @+1 {{'rtx.rope' op input must be [batch, heads, seq, head_dim], got [2, 13, 64]}}
  %0 = rtx.rope %x theta 1.0e+04 : tensor<2x13x64xf32>
  return %0 : tensor<2x13x64xf32>
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x8x13x65xf32>) -> tensor<2x8x13x65xf32> {
  // expected-error @+1 {{'rtx.rope' op head_dim must be even, got 65}}
  %0 = rtx.rope %x theta 1.0e+04 : tensor<2x8x13x65xf32>
  return %0 : tensor<2x8x13x65xf32>
}

// -----

func.func @rope_zero_theta(%x: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.rope' op theta must be positive}}
  %0 = rtx.rope %x theta 0.0 : tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @rope_negative_theta(%x: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.rope' op theta must be positive}}
  %0 = rtx.rope %x theta -1.0e+04 : tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @rope_negative_offset(%x: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xf32> {
  // expected-error @+1 {{'rtx.rope' op offset must be non-negative}}
  %0 = rtx.rope %x theta 1.0e+04 {offset = -1 : i64} : tensor<2x8x13x64xf32>
  return %0 : tensor<2x8x13x64xf32>
}

// -----

func.func @rope_result_type(%x: tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xbf16> {
  // expected-error @+1 {{'rtx.rope' op requires the same type for all operands and results}}
  %0 = "rtx.rope"(%x) <{theta = 1.0e+04 : f64}> : (tensor<2x8x13x64xf32>) -> tensor<2x8x13x64xbf16>
  return %0 : tensor<2x8x13x64xbf16>
}
