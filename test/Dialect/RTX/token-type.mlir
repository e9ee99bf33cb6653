// RUN: rtx-opt %s -split-input-file | FileCheck %s
// RUN: rtx-opt %s -split-input-file -mlir-print-op-generic | rtx-opt -split-input-file | FileCheck %s

// The !rtx.token type, with and without a value type.

// CHECK-LABEL: func.func @token_in_signature
// CHECK-SAME: (%[[A:[^:]*]]: !rtx.token, %[[B:[^:]*]]: !rtx.token<tensor<7x13xf32>>) -> !rtx.token<tensor<7x13xf32>>
// CHECK: return %[[B]] : !rtx.token<tensor<7x13xf32>>
func.func @token_in_signature(%a: !rtx.token, %b: !rtx.token<tensor<7x13xf32>>) -> !rtx.token<tensor<7x13xf32>> {
  return %b : !rtx.token<tensor<7x13xf32>>
}

// -----

// A token may cross a call; the wait happens in the caller.
// CHECK-LABEL: func.func private @start(tensor<7xbf16>) -> (!rtx.token<tensor<14xbf16>>, !rtx.token)
// CHECK-LABEL: func.func @token_through_call
// CHECK-SAME: (%[[X:[^:]*]]: tensor<7xbf16>)
// CHECK: %[[T:.*]]:2 = call @start(%[[X]]) : (tensor<7xbf16>) -> (!rtx.token<tensor<14xbf16>>, !rtx.token)
// CHECK: %[[Y:.*]] = rtx.wait %[[T]]#0 : !rtx.token<tensor<14xbf16>> -> tensor<14xbf16>
// CHECK: rtx.wait %[[T]]#1 : !rtx.token{{$}}
// CHECK: return %[[Y]]
func.func private @start(tensor<7xbf16>) -> (!rtx.token<tensor<14xbf16>>, !rtx.token)
func.func @token_through_call(%x: tensor<7xbf16>) -> tensor<14xbf16> {
  %t:2 = func.call @start(%x) : (tensor<7xbf16>) -> (!rtx.token<tensor<14xbf16>>, !rtx.token)
  %y = rtx.wait %t#0 : !rtx.token<tensor<14xbf16>> -> tensor<14xbf16>
  rtx.wait %t#1 : !rtx.token
  return %y : tensor<14xbf16>
}

// -----

// Value types of several ranks and element types.
// CHECK-LABEL: func.func @token_value_types
// CHECK-SAME: !rtx.token<tensor<f32>>
// CHECK-SAME: !rtx.token<tensor<65xi64>>
// CHECK-SAME: !rtx.token<tensor<2x2xi1>>
// CHECK-SAME: !rtx.token<tensor<3x5x7xf16>>
func.func @token_value_types(%a: !rtx.token<tensor<f32>>, %b: !rtx.token<tensor<65xi64>>, %c: !rtx.token<tensor<2x2xi1>>, %d: !rtx.token<tensor<3x5x7xf16>>) {
  return
}

// -----

// The wait consumes a token that is a block argument.
// CHECK-LABEL: func.func @wait_on_argument
// CHECK-SAME: (%[[T:[^:]*]]: !rtx.token<tensor<13xf32>>, %[[S:[^:]*]]: !rtx.token)
// CHECK: %[[Y:.*]] = rtx.wait %[[T]] : !rtx.token<tensor<13xf32>> -> tensor<13xf32>
// CHECK: rtx.wait %[[S]] : !rtx.token{{$}}
func.func @wait_on_argument(%t: !rtx.token<tensor<13xf32>>, %s: !rtx.token) -> tensor<13xf32> {
  %y = rtx.wait %t : !rtx.token<tensor<13xf32>> -> tensor<13xf32>
  rtx.wait %s : !rtx.token
  return %y : tensor<13xf32>
}
