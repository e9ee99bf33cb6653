// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Elementwise ops. rtx.compare carries an enum attribute and is tested in
// enum-attrs.mlir.

// CHECK-LABEL: func.func @binary_ops
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>, %[[Y:[^:]*]]: tensor<7x13xf32>)
// CHECK: %[[ADD:.*]] = rtx.add %[[X]], %[[Y]] : tensor<7x13xf32>
// CHECK: %[[SUB:.*]] = rtx.sub %[[ADD]], %[[Y]] : tensor<7x13xf32>
// CHECK: %[[MUL:.*]] = rtx.mul %[[SUB]], %[[X]] : tensor<7x13xf32>
// CHECK: %[[DIV:.*]] = rtx.div %[[MUL]], %[[Y]] : tensor<7x13xf32>
// CHECK: %[[MAX:.*]] = rtx.maximum %[[DIV]], %[[X]] : tensor<7x13xf32>
// CHECK: %[[MIN:.*]] = rtx.minimum %[[MAX]], %[[Y]] : tensor<7x13xf32>
// CHECK: return %[[MIN]]
func.func @binary_ops(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %0 = rtx.add %x, %y : tensor<7x13xf32>
  %1 = rtx.sub %0, %y : tensor<7x13xf32>
  %2 = rtx.mul %1, %x : tensor<7x13xf32>
  %3 = rtx.div %2, %y : tensor<7x13xf32>
  %4 = rtx.maximum %3, %x : tensor<7x13xf32>
  %5 = rtx.minimum %4, %y : tensor<7x13xf32>
  return %5 : tensor<7x13xf32>
}

// -----

// Operand order is kept, also for commutative ops.
// CHECK-LABEL: func.func @binary_operand_order
// CHECK-SAME: (%[[X:[^:]*]]: tensor<65xbf16>, %[[Y:[^:]*]]: tensor<65xbf16>)
// CHECK: rtx.add %[[Y]], %[[X]] : tensor<65xbf16>
// CHECK: rtx.mul %[[Y]], %[[X]] : tensor<65xbf16>
// CHECK: rtx.sub %[[Y]], %[[X]] : tensor<65xbf16>
func.func @binary_operand_order(%x: tensor<65xbf16>, %y: tensor<65xbf16>) -> (tensor<65xbf16>, tensor<65xbf16>, tensor<65xbf16>) {
  %0 = rtx.add %y, %x : tensor<65xbf16>
  %1 = rtx.mul %y, %x : tensor<65xbf16>
  %2 = rtx.sub %y, %x : tensor<65xbf16>
  return %0, %1, %2 : tensor<65xbf16>, tensor<65xbf16>, tensor<65xbf16>
}

// -----

// CHECK-LABEL: func.func @binary_scalar_f64
// CHECK: rtx.div %{{.*}}, %{{.*}} : tensor<f64>
func.func @binary_scalar_f64(%x: tensor<f64>, %y: tensor<f64>) -> tensor<f64> {
  %0 = rtx.div %x, %y : tensor<f64>
  return %0 : tensor<f64>
}

// -----

// CHECK-LABEL: func.func @unary_ops
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x7x13xf32>)
// CHECK: %[[NEG:.*]] = rtx.neg %[[X]] : tensor<2x7x13xf32>
// CHECK: %[[EXP:.*]] = rtx.exp %[[NEG]] : tensor<2x7x13xf32>
// CHECK: %[[LOG:.*]] = rtx.log %[[EXP]] : tensor<2x7x13xf32>
// CHECK: %[[SQRT:.*]] = rtx.sqrt %[[LOG]] : tensor<2x7x13xf32>
// CHECK: %[[RSQRT:.*]] = rtx.rsqrt %[[SQRT]] : tensor<2x7x13xf32>
// CHECK: %[[TANH:.*]] = rtx.tanh %[[RSQRT]] : tensor<2x7x13xf32>
// CHECK: %[[SIG:.*]] = rtx.sigmoid %[[TANH]] : tensor<2x7x13xf32>
// CHECK: %[[RELU:.*]] = rtx.relu %[[SIG]] : tensor<2x7x13xf32>
// CHECK: %[[SILU:.*]] = rtx.silu %[[RELU]] : tensor<2x7x13xf32>
// CHECK: return %[[SILU]]
func.func @unary_ops(%x: tensor<2x7x13xf32>) -> tensor<2x7x13xf32> {
  %0 = rtx.neg %x : tensor<2x7x13xf32>
  %1 = rtx.exp %0 : tensor<2x7x13xf32>
  %2 = rtx.log %1 : tensor<2x7x13xf32>
  %3 = rtx.sqrt %2 : tensor<2x7x13xf32>
  %4 = rtx.rsqrt %3 : tensor<2x7x13xf32>
  %5 = rtx.tanh %4 : tensor<2x7x13xf32>
  %6 = rtx.sigmoid %5 : tensor<2x7x13xf32>
  %7 = rtx.relu %6 : tensor<2x7x13xf32>
  %8 = rtx.silu %7 : tensor<2x7x13xf32>
  return %8 : tensor<2x7x13xf32>
}

// -----

// CHECK-LABEL: func.func @unary_other_float_types
// CHECK: rtx.exp %{{.*}} : tensor<65xf16>
// CHECK: rtx.tanh %{{.*}} : tensor<65xbf16>
// CHECK: rtx.log %{{.*}} : tensor<f64>
func.func @unary_other_float_types(%a: tensor<65xf16>, %b: tensor<65xbf16>, %c: tensor<f64>) -> (tensor<65xf16>, tensor<65xbf16>, tensor<f64>) {
  %0 = rtx.exp %a : tensor<65xf16>
  %1 = rtx.tanh %b : tensor<65xbf16>
  %2 = rtx.log %c : tensor<f64>
  return %0, %1, %2 : tensor<65xf16>, tensor<65xbf16>, tensor<f64>
}

// -----

// CHECK-LABEL: func.func @gelu_exact_and_tanh
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>)
// CHECK: %[[E:.*]] = rtx.gelu %[[X]] : tensor<7x13xf32>
// CHECK: %[[A:.*]] = rtx.gelu %[[E]] approximate : tensor<7x13xf32>
// CHECK: return %[[A]]
func.func @gelu_exact_and_tanh(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %0 = rtx.gelu %x : tensor<7x13xf32>
  %1 = rtx.gelu %0 approximate : tensor<7x13xf32>
  return %1 : tensor<7x13xf32>
}

// -----

// CHECK-LABEL: func.func @convert_mixed_precision
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7x13xf32>)
// CHECK: %[[H:.*]] = rtx.convert %[[X]] : tensor<7x13xf32> -> tensor<7x13xbf16>
// CHECK: %[[F:.*]] = rtx.convert %[[H]] : tensor<7x13xbf16> -> tensor<7x13xf32>
// CHECK: return %[[F]]
func.func @convert_mixed_precision(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %0 = rtx.convert %x : tensor<7x13xf32> -> tensor<7x13xbf16>
  %1 = rtx.convert %0 : tensor<7x13xbf16> -> tensor<7x13xf32>
  return %1 : tensor<7x13xf32>
}

// -----

// CHECK-LABEL: func.func @convert_int_float_mask
// CHECK: rtx.convert %{{.*}} : tensor<13xi32> -> tensor<13xf32>
// CHECK: rtx.convert %{{.*}} : tensor<13xf32> -> tensor<13xi64>
// CHECK: rtx.convert %{{.*}} : tensor<13xi1> -> tensor<13xf16>
func.func @convert_int_float_mask(%i: tensor<13xi32>, %m: tensor<13xi1>) -> (tensor<13xi64>, tensor<13xf16>) {
  %0 = rtx.convert %i : tensor<13xi32> -> tensor<13xf32>
  %1 = rtx.convert %0 : tensor<13xf32> -> tensor<13xi64>
  %2 = rtx.convert %m : tensor<13xi1> -> tensor<13xf16>
  return %1, %2 : tensor<13xi64>, tensor<13xf16>
}

// -----

// CHECK-LABEL: func.func @where_select
// CHECK-SAME: (%[[M:[^:]*]]: tensor<13x13xi1>, %[[X:[^:]*]]: tensor<13x13xf32>, %[[Y:[^:]*]]: tensor<13x13xf32>)
// CHECK: %[[R:.*]] = rtx.where %[[M]], %[[X]], %[[Y]] : tensor<13x13xi1>, tensor<13x13xf32>
// CHECK: return %[[R]]
func.func @where_select(%m: tensor<13x13xi1>, %x: tensor<13x13xf32>, %y: tensor<13x13xf32>) -> tensor<13x13xf32> {
  %0 = rtx.where %m, %x, %y : tensor<13x13xi1>, tensor<13x13xf32>
  return %0 : tensor<13x13xf32>
}

// -----

// rtx.where also selects integer and mask tensors.
// CHECK-LABEL: func.func @where_integer_values
// CHECK: rtx.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<7xi1>, tensor<7xi64>
// CHECK: rtx.where %{{.*}}, %{{.*}}, %{{.*}} : tensor<7xi1>, tensor<7xi1>
func.func @where_integer_values(%m: tensor<7xi1>, %a: tensor<7xi64>, %b: tensor<7xi64>) -> (tensor<7xi64>, tensor<7xi1>) {
  %0 = rtx.where %m, %a, %b : tensor<7xi1>, tensor<7xi64>
  %1 = rtx.where %m, %m, %m : tensor<7xi1>, tensor<7xi1>
  return %0, %1 : tensor<7xi64>, tensor<7xi1>
}

// -----

// CHECK-LABEL: func.func @masked_fill_neg_inf
// CHECK-SAME: (%[[S:[^:]*]]: tensor<2x4x13x13xf32>, %[[M:[^:]*]]: tensor<2x4x13x13xi1>)
// CHECK: %[[R:.*]] = rtx.masked_fill %[[S]], %[[M]], 0xFFF0000000000000 : tensor<2x4x13x13xf32>, tensor<2x4x13x13xi1>
// CHECK: return %[[R]]
func.func @masked_fill_neg_inf(%s: tensor<2x4x13x13xf32>, %m: tensor<2x4x13x13xi1>) -> tensor<2x4x13x13xf32> {
  %0 = rtx.masked_fill %s, %m, 0xFFF0000000000000 : tensor<2x4x13x13xf32>, tensor<2x4x13x13xi1>
  return %0 : tensor<2x4x13x13xf32>
}

// -----

// CHECK-LABEL: func.func @masked_fill_finite
// CHECK: rtx.masked_fill %{{.*}}, %{{.*}}, -1.000000e+04 : tensor<7xbf16>, tensor<7xi1>
func.func @masked_fill_finite(%x: tensor<7xbf16>, %m: tensor<7xi1>) -> tensor<7xbf16> {
  %0 = rtx.masked_fill %x, %m, -1.0e4 : tensor<7xbf16>, tensor<7xi1>
  return %0 : tensor<7xbf16>
}

// -----

// CHECK-LABEL: func.func @dropout_rates
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x13x65xf32>)
// CHECK: %[[A:.*]] = rtx.dropout %[[X]] rate 1.000000e-01 seed 42 : tensor<8x13x65xf32>
// CHECK: %[[B:.*]] = rtx.dropout %[[A]] rate 0.000000e+00 seed 0 : tensor<8x13x65xf32>
// CHECK: %[[C:.*]] = rtx.dropout %[[B]] rate 7.500000e-01 seed -7 : tensor<8x13x65xf32>
// CHECK: return %[[C]]
func.func @dropout_rates(%x: tensor<8x13x65xf32>) -> tensor<8x13x65xf32> {
  %0 = rtx.dropout %x rate 0.1 seed 42 : tensor<8x13x65xf32>
  %1 = rtx.dropout %0 rate 0.0 seed 0 : tensor<8x13x65xf32>
  %2 = rtx.dropout %1 rate 0.75 seed -7 : tensor<8x13x65xf32>
  return %2 : tensor<8x13x65xf32>
}

// -----

// CHECK-LABEL: func.func @swiglu
// CHECK: %[[H:.*]] = rtx.swiglu %{{.*}}, %{{.*}} : tensor<2x5x12xf32>
// CHECK: rtx.swiglu %{{.*}}, %{{.*}} : tensor<3xbf16>
func.func @swiglu(%gate: tensor<2x5x12xf32>, %up: tensor<2x5x12xf32>,
                  %g16: tensor<3xbf16>, %u16: tensor<3xbf16>)
    -> (tensor<2x5x12xf32>, tensor<3xbf16>) {
  %0 = rtx.swiglu %gate, %up : tensor<2x5x12xf32>
  %1 = rtx.swiglu %g16, %u16 : tensor<3xbf16>
  return %0, %1 : tensor<2x5x12xf32>, tensor<3xbf16>
}
