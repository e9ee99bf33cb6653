// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// Values that enter the model: rtx.param (every initializer kind), rtx.input
// and rtx.constant.

// CHECK-LABEL: func.func @param_every_initializer
func.func @param_every_initializer() {
  // CHECK: %{{.*}} = rtx.param "h.0.mlp.c_fc.weight" normal(0.000000e+00, 2.000000e-02) : tensor<65x13xf32>
  %0 = rtx.param "h.0.mlp.c_fc.weight" normal(0.0, 0.02) : tensor<65x13xf32>
  // CHECK: %{{.*}} = rtx.param "h.0.mlp.c_fc.bias" zeros : tensor<65xf32>
  %1 = rtx.param "h.0.mlp.c_fc.bias" zeros : tensor<65xf32>
  // CHECK: %{{.*}} = rtx.param "h.0.ln_1.weight" ones : tensor<13xf32>
  %2 = rtx.param "h.0.ln_1.weight" ones : tensor<13xf32>
  // CHECK: %{{.*}} = rtx.param "scale" constant(-2.500000e-01) : tensor<7xf32>
  %3 = rtx.param "scale" constant(-0.25) : tensor<7xf32>
  // CHECK: %{{.*}} = rtx.param "proj" uniform(-1.000000e-01, 1.000000e-01) : tensor<7x13xf32>
  %4 = rtx.param "proj" uniform(-0.1, 0.1) : tensor<7x13xf32>
  return
}

// -----

// CHECK-LABEL: func.func @param_seed
func.func @param_seed() {
  // CHECK: %{{.*}} = rtx.param "w" normal(1.000000e+00, 5.000000e-01) seed 7 : tensor<3072x768xf32>
  %0 = rtx.param "w" normal(1.0, 0.5) seed 7 : tensor<3072x768xf32>
  // A seed of 0 is kept as written, not dropped as the default.
  // CHECK: %{{.*}} = rtx.param "v" uniform(0.000000e+00, 1.000000e+00) seed 0 : tensor<13xf32>
  %1 = rtx.param "v" uniform(0.0, 1.0) seed 0 : tensor<13xf32>
  // CHECK: %{{.*}} = rtx.param "u" zeros seed -3 : tensor<13xf32>
  %2 = rtx.param "u" zeros seed -3 : tensor<13xf32>
  return
}

// -----

// CHECK-LABEL: func.func @param_float_types
func.func @param_float_types() {
  // CHECK: rtx.param "a" ones : tensor<7xbf16>
  %0 = rtx.param "a" ones : tensor<7xbf16>
  // CHECK: rtx.param "b" ones : tensor<7xf16>
  %1 = rtx.param "b" ones : tensor<7xf16>
  // CHECK: rtx.param "c" ones : tensor<7xf64>
  %2 = rtx.param "c" ones : tensor<7xf64>
  // A scalar parameter.
  // CHECK: rtx.param "d" constant(3.000000e+00) : tensor<f32>
  %3 = rtx.param "d" constant(3.0) : tensor<f32>
  return
}

// -----

// The same name in two functions is fine: names are unique per function.
// CHECK-LABEL: func.func @param_same_name_first
// CHECK: rtx.param "w" zeros : tensor<7xf32>
func.func @param_same_name_first() {
  %0 = rtx.param "w" zeros : tensor<7xf32>
  return
}
// CHECK-LABEL: func.func @param_same_name_second
// CHECK: rtx.param "w" zeros : tensor<7xf32>
func.func @param_same_name_second() {
  %0 = rtx.param "w" zeros : tensor<7xf32>
  return
}

// -----

// CHECK-LABEL: func.func @param_extra_attr
func.func @param_extra_attr() {
  // Other attributes print after the seed, before the colon.
  // CHECK: rtx.param "w" zeros seed 1 {note = "x"} : tensor<7xf32>
  %0 = rtx.param "w" zeros seed 1 {note = "x"} : tensor<7xf32>
  return
}

// -----

// CHECK-LABEL: func.func @input_types
func.func @input_types() {
  // CHECK: %{{.*}} = rtx.input "tokens" : tensor<8x128xi32>
  %0 = rtx.input "tokens" : tensor<8x128xi32>
  // CHECK: %{{.*}} = rtx.input "labels" : tensor<7x13xi64>
  %1 = rtx.input "labels" : tensor<7x13xi64>
  // CHECK: %{{.*}} = rtx.input "features" : tensor<7x65xf32>
  %2 = rtx.input "features" : tensor<7x65xf32>
  // CHECK: %{{.*}} = rtx.input "mask" : tensor<13x13xi1>
  %3 = rtx.input "mask" : tensor<13x13xi1>
  // CHECK: %{{.*}} = rtx.input "lr" : tensor<f32>
  %4 = rtx.input "lr" : tensor<f32>
  return
}

// -----

// CHECK-LABEL: func.func @constant_values
func.func @constant_values() {
  // CHECK: %{{.*}} = rtx.constant dense<1.000000e+00> : tensor<4x8xf32>
  %0 = rtx.constant dense<1.0> : tensor<4x8xf32>
  // CHECK: %{{.*}} = rtx.constant dense<{{\[}}[true, false], [true, true]]> : tensor<2x2xi1>
  %1 = rtx.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  // CHECK: %{{.*}} = rtx.constant dense<[0, 1, 2, 3, 4, 5, 6]> : tensor<7xi32>
  %2 = rtx.constant dense<[0, 1, 2, 3, 4, 5, 6]> : tensor<7xi32>
  // CHECK: %{{.*}} = rtx.constant dense<-1> : tensor<13xi64>
  %3 = rtx.constant dense<-1> : tensor<13xi64>
  // CHECK: %{{.*}} = rtx.constant dense<5.000000e-01> : tensor<f32>
  %4 = rtx.constant dense<0.5> : tensor<f32>
  // CHECK: %{{.*}} = rtx.constant dense<2.000000e+00> : tensor<3x5xbf16>
  %5 = rtx.constant dense<2.0> : tensor<3x5xbf16>
  // CHECK: %{{.*}} = rtx.constant dense<0xFF800000> : tensor<7xf32>
  %6 = rtx.constant dense<0xFF800000> : tensor<7xf32>
  return
}

// -----

// CHECK-LABEL: func.func @values_feed_ops
// CHECK: %[[W:.*]] = rtx.param "w" normal(0.000000e+00, 2.000000e-02) seed 3 : tensor<65x13xf32>
// CHECK: %[[X:.*]] = rtx.input "x" : tensor<7x13xf32>
// CHECK: %[[Y:.*]] = rtx.linear %[[X]], %[[W]] : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
// CHECK: return %[[Y]] : tensor<7x65xf32>
func.func @values_feed_ops() -> tensor<7x65xf32> {
  %w = rtx.param "w" normal(0.0, 0.02) seed 3 : tensor<65x13xf32>
  %x = rtx.input "x" : tensor<7x13xf32>
  %y = rtx.linear %x, %w : tensor<7x13xf32>, tensor<65x13xf32> -> tensor<7x65xf32>
  return %y : tensor<7x65xf32>
}

// -----

// The #rtx.init attribute on its own, and rtx.param in generic form.
// CHECK-LABEL: func.func @init_attribute
// CHECK-SAME: attributes {a = #rtx.init<normal(0.000000e+00, 2.000000e-02)>, b = #rtx.init<zeros>, c = #rtx.init<uniform(-1.000000e-01, 1.000000e-01)>, d = #rtx.init<constant(2.000000e+00)>, e = #rtx.init<ones>}
// CHECK: rtx.param "w" uniform(-1.000000e-01, 1.000000e-01) seed 5 : tensor<7xf32>
func.func @init_attribute() attributes {a = #rtx.init<normal(0.0, 0.02)>, b = #rtx.init<zeros>, c = #rtx.init<uniform(-0.1, 0.1)>, d = #rtx.init<constant(2.0)>, e = #rtx.init<ones>} {
  %0 = "rtx.param"() <{name = "w", init = #rtx.init<uniform(-0.1, 0.1)>, seed = 5 : i64}> : () -> tensor<7xf32>
  return
}
