// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Elementwise ops: binary, unary, gelu, convert, compare, where, masked_fill,
// dropout.

func.func @add_operand_types_differ(%x: tensor<7x13xf32>, %y: tensor<7x13xbf16>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.add' op requires the same type for all operands and results}}
  %0 = "rtx.add"(%x, %y) : (tensor<7x13xf32>, tensor<7x13xbf16>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

// Broadcasting is explicit: operands of different shapes are rejected.
func.func @mul_implicit_broadcast(%x: tensor<7x13xf32>, %y: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.mul' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "rtx.mul"(%x, %y) : (tensor<7x13xf32>, tensor<13xf32>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @sub_result_type(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<13x7xf32> {
  // expected-error @+1 {{'rtx.sub' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "rtx.sub"(%x, %y) : (tensor<7x13xf32>, tensor<7x13xf32>) -> tensor<13x7xf32>
  return %0 : tensor<13x7xf32>
}

// -----

func.func @div_integer(%x: tensor<7xi32>, %y: tensor<7xi32>) -> tensor<7xi32> {
  // expected-error @+1 {{'rtx.div' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7xi32>'}}
  %0 = rtx.div %x, %y : tensor<7xi32>
  return %0 : tensor<7xi32>
}

// -----

func.func @maximum_dynamic_shape(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'rtx.maximum' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = rtx.maximum %x, %y : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @exp_result_type(%x: tensor<7xf32>) -> tensor<7xf16> {
  // expected-error @+1 {{'rtx.exp' op requires the same type for all operands and results}}
  %0 = "rtx.exp"(%x) : (tensor<7xf32>) -> tensor<7xf16>
  return %0 : tensor<7xf16>
}

// -----

func.func @neg_integer(%x: tensor<7xi64>) -> tensor<7xi64> {
  // expected-error @+1 {{'rtx.neg' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7xi64>'}}
  %0 = rtx.neg %x : tensor<7xi64>
  return %0 : tensor<7xi64>
}

// -----

func.func @relu_dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'rtx.relu' op operand #0 must be statically shaped tensor}}
  %0 = rtx.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @gelu_integer(%x: tensor<7xi32>) -> tensor<7xi32> {
  // expected-error @+1 {{'rtx.gelu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7xi32>'}}
  %0 = rtx.gelu %x approximate : tensor<7xi32>
  return %0 : tensor<7xi32>
}

// -----

func.func @convert_shape_change(%x: tensor<7x13xf32>) -> tensor<13x7xbf16> {
  // expected-error @+1 {{'rtx.convert' op all non-scalar operands/results must have the same shape and base type}}
  %0 = rtx.convert %x : tensor<7x13xf32> -> tensor<13x7xbf16>
  return %0 : tensor<13x7xbf16>
}

// -----

func.func @convert_unsupported_type(%x: tensor<7xf32>) -> tensor<7xi8> {
  // expected-error @+1 {{'rtx.convert' op result #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<7xi8>'}}
  %0 = rtx.convert %x : tensor<7xf32> -> tensor<7xi8>
  return %0 : tensor<7xi8>
}

// -----

// Operands of two types can only be written in the generic form, where the
// predicate cannot be spelled (see enum-attrs-generic.mlir): the missing
// predicate is reported.
func.func @compare_missing_predicate(%x: tensor<7xf32>, %y: tensor<7xf16>) -> tensor<7xi1> {
  // expected-error @+1 {{'rtx.compare' op requires attribute 'predicate'}}
  %0 = "rtx.compare"(%x, %y) : (tensor<7xf32>, tensor<7xf16>) -> tensor<7xi1>
  return %0 : tensor<7xi1>
}

// -----

func.func @compare_float_result(%x: tensor<7xf32>, %y: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.compare' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<7xf32>'}}
  %0 = rtx.compare lt, %x, %y : tensor<7xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @compare_result_shape(%x: tensor<7xf32>, %y: tensor<7xf32>) -> tensor<13xi1> {
  // expected-error @+1 {{'rtx.compare' op all non-scalar operands/results must have the same shape and base type}}
  %0 = rtx.compare lt, %x, %y : tensor<7xf32> -> tensor<13xi1>
  return %0 : tensor<13xi1>
}

// -----

func.func @compare_unknown_predicate(%x: tensor<7xf32>, %y: tensor<7xf32>) -> tensor<7xi1> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'predicate' [eq, ne, lt, le, gt, ge]}}
  %0 = rtx.compare less, %x, %y : tensor<7xf32> -> tensor<7xi1>
  return %0 : tensor<7xi1>
}

// -----

func.func @where_condition_shape(%m: tensor<13xi1>, %x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.where' op all non-scalar operands/results must have the same shape and base type}}
  %0 = rtx.where %m, %x, %y : tensor<13xi1>, tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @where_float_condition(%m: tensor<7xf32>, %x: tensor<7xf32>, %y: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<7xf32>'}}
  %0 = rtx.where %m, %x, %y : tensor<7xf32>, tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @where_value_types_differ(%m: tensor<7xi1>, %x: tensor<7xf32>, %y: tensor<7xbf16>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.where' op failed to verify that all of {on_true, on_false, result} have same type}}
  %0 = "rtx.where"(%m, %x, %y) : (tensor<7xi1>, tensor<7xf32>, tensor<7xbf16>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @masked_fill_mask_shape(%x: tensor<2x13x13xf32>, %m: tensor<13x13xi1>) -> tensor<2x13x13xf32> {
  // expected-error @+1 {{'rtx.masked_fill' op all non-scalar operands/results must have the same shape and base type}}
  %0 = rtx.masked_fill %x, %m, 0xFFF0000000000000 : tensor<2x13x13xf32>, tensor<13x13xi1>
  return %0 : tensor<2x13x13xf32>
}

// -----

func.func @masked_fill_float_mask(%x: tensor<7xf32>, %m: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.masked_fill' op operand #1 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<7xf32>'}}
  %0 = rtx.masked_fill %x, %m, 0.0 : tensor<7xf32>, tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @masked_fill_integer_input(%x: tensor<7xi32>, %m: tensor<7xi1>) -> tensor<7xi32> {
  // expected-error @+1 {{'rtx.masked_fill' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float values, but got 'tensor<7xi32>'}}
  %0 = rtx.masked_fill %x, %m, 0.0 : tensor<7xi32>, tensor<7xi1>
  return %0 : tensor<7xi32>
}

// -----

func.func @dropout_rate_one(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.dropout' op rate must be in [0, 1), got 1.000000e+00}}
  %0 = rtx.dropout %x rate 1.0 seed 0 : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @dropout_rate_negative(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.dropout' op rate must be in [0, 1), got -1.000000e-01}}
  %0 = rtx.dropout %x rate -0.1 seed 0 : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @dropout_rate_nan(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.dropout' op rate must be in [0, 1), got nan}}
  %0 = rtx.dropout %x rate 0x7FF8000000000000 seed 0 : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @dropout_missing_seed(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{expected 'seed'}}
  %0 = rtx.dropout %x rate 0.5 : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// swiglu's gate and up are one shape: the product is not broadcast.
func.func @swiglu_shapes_differ(%g: tensor<7x13xf32>, %u: tensor<13xf32>) -> tensor<7x13xf32> {
  // expected-error @+1 {{'rtx.swiglu' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "rtx.swiglu"(%g, %u) : (tensor<7x13xf32>, tensor<13xf32>) -> tensor<7x13xf32>
  return %0 : tensor<7x13xf32>
}

// -----

func.func @swiglu_on_integers(%g: tensor<4xi32>, %u: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rtx.swiglu' op operand #0 must be statically shaped tensor of}}
  %0 = "rtx.swiglu"(%g, %u) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
