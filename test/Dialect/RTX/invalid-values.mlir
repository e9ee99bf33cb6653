// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// rtx.param, rtx.input, rtx.constant and the #rtx.init attribute.

func.func @param_empty_name() {
  // expected-error @+1 {{'rtx.param' op parameter name must not be empty}}
  %0 = rtx.param "" zeros : tensor<7xf32>
  return
}

// -----

func.func @param_declared_twice() {
  // expected-note @+1 {{first declared here}}
  %0 = rtx.param "h.0.attn.c_attn.weight" zeros : tensor<7xf32>
  %1 = rtx.param "other" zeros : tensor<7xf32>
  // expected-error @+1 {{'rtx.param' op parameter "h.0.attn.c_attn.weight" is declared twice}}
  %2 = rtx.param "h.0.attn.c_attn.weight" ones : tensor<13xf32>
  return
}

// -----

func.func @param_integer_type() {
  // expected-error @+1 {{'rtx.param' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7xi32>'}}
  %0 = rtx.param "w" zeros : tensor<7xi32>
  return
}

// -----

func.func @param_dynamic_shape() {
  // expected-error @+1 {{'rtx.param' op result #0 must be statically shaped tensor}}
  %0 = rtx.param "w" zeros : tensor<?x4xf32>
  return
}

// -----

func.func @param_unknown_initializer() {
  // expected-error @+1 {{unknown initializer 'gaussian'; expected zeros, ones, constant(v), normal(mean, std) or uniform(low, high)}}
  %0 = rtx.param "w" gaussian(0.0, 1.0) : tensor<7xf32>
  return
}

// -----

func.func @param_normal_zero_std() {
  // expected-error @+1 {{normal initializer needs a positive standard deviation, got 0.000000e+00}}
  %0 = rtx.param "w" normal(0.0, 0.0) : tensor<7xf32>
  return
}

// -----

func.func @param_normal_negative_std() {
  // expected-error @+1 {{normal initializer needs a positive standard deviation, got -2.000000e-02}}
  %0 = rtx.param "w" normal(0.0, -0.02) : tensor<7xf32>
  return
}

// -----

func.func @param_normal_nan_std() {
  // expected-error @+1 {{normal initializer needs a positive standard deviation, got nan}}
  %0 = rtx.param "w" normal(0.0, 0x7FF8000000000000) : tensor<7xf32>
  return
}

// -----

func.func @param_uniform_low_equals_high() {
  // expected-error @+1 {{uniform initializer needs low < high, got (1.000000e+00, 1.000000e+00)}}
  %0 = rtx.param "w" uniform(1.0, 1.0) : tensor<7xf32>
  return
}

// -----

func.func @param_uniform_low_above_high() {
  // expected-error @+1 {{uniform initializer needs low < high, got (5.000000e-01, -2.500000e-01)}}
  %0 = rtx.param "w" uniform(0.5, -0.25) : tensor<7xf32>
  return
}

// -----

func.func @param_normal_missing_std() {
  // expected-error @+1 {{expected ','}}
  %0 = rtx.param "w" normal(0.0) : tensor<7xf32>
  return
}

// -----

func.func @param_constant_missing_value() {
  // expected-error @+1 {{expected '('}}
  %0 = rtx.param "w" constant : tensor<7xf32>
  return
}

// -----

func.func @param_zeros_with_argument() {
  // expected-error @+1 {{expected ':'}}
  %0 = rtx.param "w" zeros(1.0) : tensor<7xf32>
  return
}

// -----

// The attribute form is verified the same way.
// expected-error @+1 {{normal initializer needs a positive standard deviation, got -1.000000e+00}}
func.func @init_attr_normal_negative_std() attributes {init = #rtx.init<normal(0.0, -1.0)>} {
  return
}

// -----

// expected-error @+1 {{uniform initializer needs low < high, got (2.000000e+00, 1.000000e+00)}}
func.func @init_attr_uniform_reversed() attributes {init = #rtx.init<uniform(2.0, 1.0)>} {
  return
}

// -----

// expected-error @+1 {{unknown initializer 'xavier'}}
func.func @init_attr_unknown_keyword() attributes {init = #rtx.init<xavier>} {
  return
}

// -----

func.func @input_empty_name() {
  // expected-error @+1 {{'rtx.input' op input name must not be empty}}
  %0 = rtx.input "" : tensor<7xi32>
  return
}

// -----

func.func @input_declared_twice() {
  // expected-note @+1 {{first declared here}}
  %0 = rtx.input "tokens" : tensor<8x13xi32>
  // expected-error @+1 {{'rtx.input' op input "tokens" is declared twice}}
  %1 = rtx.input "tokens" : tensor<8x13xi64>
  return
}

// -----

// A parameter and an input may share a name: the namespaces are separate.
func.func @param_and_input_same_name() {
  %0 = rtx.param "x" zeros : tensor<7xf32>
  // expected-note @+1 {{first declared here}}
  %1 = rtx.input "x" : tensor<7xf32>
  // expected-error @+1 {{'rtx.input' op input "x" is declared twice}}
  %2 = rtx.input "x" : tensor<7xf32>
  return
}

// -----

func.func @input_unsigned_type() {
  // expected-error @+1 {{'rtx.input' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<7xui8>'}}
  %0 = rtx.input "x" : tensor<7xui8>
  return
}

// -----

func.func @input_dynamic_shape() {
  // expected-error @+1 {{'rtx.input' op result #0 must be statically shaped tensor}}
  %0 = rtx.input "x" : tensor<?x4xi32>
  return
}

// -----

func.func @constant_type_mismatch() {
  // expected-error @+1 {{'rtx.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "rtx.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<5xf32>
  return
}

// -----

func.func @constant_unsupported_element_type() {
  // expected-error @+1 {{'rtx.constant' op result #0 must be statically shaped tensor}}
  %0 = rtx.constant dense<1> : tensor<4xi8>
  return
}
