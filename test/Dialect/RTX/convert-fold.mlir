// RUN: rtx-opt %s -canonicalize | FileCheck %s
// rtx.convert folds a conversion to its input's type, and a round trip
// through a type that holds every value exactly (bf16 -> f32 -> bf16, the
// pair mixed precision's f32 gradient accumulation leaves); a round trip
// through a narrower type rounds, and stays.

// CHECK-LABEL: func.func @round_trips
// CHECK-SAME: (%[[B:.*]]: tensor<4xbf16>, %[[F:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf16>)
func.func @round_trips(%b: tensor<4xbf16>, %f: tensor<4xf32>, %h: tensor<4xf16>)
    -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) {
  %0 = rtx.convert %b : tensor<4xbf16> -> tensor<4xf32>
  %1 = rtx.convert %0 : tensor<4xf32> -> tensor<4xbf16>
  %2 = rtx.convert %f : tensor<4xf32> -> tensor<4xf32>
  %3 = rtx.convert %h : tensor<4xf16> -> tensor<4xf64>
  %4 = rtx.convert %3 : tensor<4xf64> -> tensor<4xf16>
  // f16 -> bf16 -> f16 loses mantissa bits: kept.
  %5 = rtx.convert %h : tensor<4xf16> -> tensor<4xbf16>
  %6 = rtx.convert %5 : tensor<4xbf16> -> tensor<4xf16>
  // f32 -> bf16 -> f32 rounds: kept.
  %7 = rtx.convert %f : tensor<4xf32> -> tensor<4xbf16>
  %8 = rtx.convert %7 : tensor<4xbf16> -> tensor<4xf32>
  // CHECK: %[[N1:.*]] = rtx.convert %[[H]] : tensor<4xf16> -> tensor<4xbf16>
  // CHECK: %[[N2:.*]] = rtx.convert %[[N1]] : tensor<4xbf16> -> tensor<4xf16>
  // CHECK: %[[R1:.*]] = rtx.convert %[[F]] : tensor<4xf32> -> tensor<4xbf16>
  // CHECK: %[[R2:.*]] = rtx.convert %[[R1]] : tensor<4xbf16> -> tensor<4xf32>
  // CHECK: return %[[B]], %[[F]], %[[H]], %[[N2]], %[[R2]]
  return %1, %2, %4, %6, %8 : tensor<4xbf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>
}
