// RUN: rtx-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// rtx.part_of (issue 36, contract 1): a parameter that is the block
// [offset, offset + its size) of dimension dim of a user's tensor, on the
// rtx.param op and, after rtx-optimizer, on the step's argument.

// CHECK-LABEL: func.func @parts
// CHECK: rtx.param "w@1" zeros {rtx.part_of = {dim = 1 : i64, name = "w", offset = 4 : i64}}
func.func @parts() -> tensor<6x4xf32> {
  %w = rtx.param "w@1" zeros {rtx.part_of = {name = "w", dim = 1 : i64, offset = 4 : i64}} : tensor<6x4xf32>
  return %w : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func.func @argument
// CHECK-SAME: rtx.part_of = {dim = 0 : i64, name = "w", offset = 0 : i64}
func.func @argument(%w: tensor<6x4xf32> {rtx.param = "w@0", rtx.init = #rtx.init<zeros>, rtx.part_of = {name = "w", dim = 0 : i64, offset = 0 : i64}}) -> tensor<6x4xf32> {
  return %w : tensor<6x4xf32>
}

// -----

func.func @dim_out_of_range() -> tensor<6x4xf32> {
  // expected-error @+1 {{'rtx.part_of' on rtx.param: dim 2 is not a dimension of 'tensor<6x4xf32>' or offset 0 is negative}}
  %w = rtx.param "w@0" zeros {rtx.part_of = {name = "w", dim = 2 : i64, offset = 0 : i64}} : tensor<6x4xf32>
  return %w : tensor<6x4xf32>
}

// -----

func.func @no_name() -> tensor<6x4xf32> {
  // expected-error @+1 {{'rtx.part_of' on rtx.param must be {name = "USER NAME", dim = D, offset = O[, size = S]} of a ranked tensor}}
  %w = rtx.param "w@0" zeros {rtx.part_of = {dim = 0 : i64, offset = 0 : i64}} : tensor<6x4xf32>
  return %w : tensor<6x4xf32>
}

// -----

func.func @not_a_param(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rtx.part_of' belongs on rtx.param ops and parameter arguments}}
  %0 = rtx.neg %x {rtx.part_of = {name = "w", dim = 0 : i64, offset = 0 : i64}} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// expected-error @+1 {{'rtx.part_of' on argument 0: dim 0 is not a dimension of 'tensor<f32>'}}
func.func @scalar_argument(%w: tensor<f32> {rtx.part_of = {name = "w", dim = 0 : i64, offset = 0 : i64}}) {
  return
}
