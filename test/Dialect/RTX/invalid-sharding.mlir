// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// The #rtx.sharding attribute itself, and its verification wherever
// `rtx.sharding` is attached (ops, function arguments, function results).

//===----------------------------------------------------------------------===//
// The attribute
//===----------------------------------------------------------------------===//

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @axis_twice_in_one_dim(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{axis "dp" appears twice in sharding on mesh @mesh_dp2_tp4}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp", "dp"], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @axis_in_two_dims(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{axis "tp" appears twice in sharding on mesh @mesh_dp2_tp4}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["tp"], ["tp"]]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// An axis cannot both split a dimension and hold partial sums.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @axis_split_and_partial(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{axis "dp" appears twice in sharding on mesh @mesh_dp2_tp4}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []], partial = ["dp"]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @axis_twice_in_partial(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{axis "tp" appears twice in sharding on mesh @mesh_dp2_tp4}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[], []], partial = ["tp", "tp"]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// The attribute is checked on its own, even where no mesh is in sight.
// expected-error @+1 {{axis "a" appears twice in sharding on mesh @mesh_nowhere}}
func.func @axis_twice_plain_attribute() attributes {note = #rtx.sharding<@mesh_nowhere, [["a"], ["a"]]>} {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @empty_axis_name(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding axis names must not be empty}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[""], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// expected-error @+1 {{sharding axis names must not be empty}}
func.func @empty_partial_axis_name() attributes {note = #rtx.sharding<@mesh_dp2_tp4, [], partial = [""]>} {
  return
}

// -----

// expected-error @+1 {{invalid kind of attribute specified}}
func.func @sharding_without_mesh() attributes {note = #rtx.sharding<[["dp"]]>} {
  return
}

// -----

// expected-error @+1 {{invalid kind of attribute specified}}
func.func @sharding_mesh_not_symbol() attributes {note = #rtx.sharding<"mesh_dp2", [["dp"]]>} {
  return
}

// -----

// expected-error @+1 {{expected string}}
func.func @sharding_bare_axis_name() attributes {note = #rtx.sharding<@mesh_dp2, [[dp]]>} {
  return
}

// -----

// A dimension is a list of axes, not an axis.
// expected-error @+1 {{expected '['}}
func.func @sharding_dim_not_a_list() attributes {note = #rtx.sharding<@mesh_dp2, ["dp"]>} {
  return
}

// -----

// expected-error @+1 {{expected 'partial'}}
func.func @sharding_misspelled_partial() attributes {note = #rtx.sharding<@mesh_dp2, [["dp"]], partal = ["tp"]>} {
  return
}

// -----

// expected-error @+1 {{expected '>'}}
func.func @sharding_unclosed() attributes {note = #rtx.sharding<@mesh_dp2, [["dp"]] ["tp"]>} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// `rtx.sharding` on ops
//===----------------------------------------------------------------------===//

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_unknown_mesh(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 refers to unknown mesh @mesh_dp4}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp4, [["dp"], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// A symbol that is not a mesh.
func.func @op_mesh_is_a_function(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 refers to unknown mesh @op_mesh_is_a_function}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@op_mesh_is_a_function, [[], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_unknown_axis(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 uses axis "pp" which mesh @mesh_dp2_tp4 does not have}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp", "pp"], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_unknown_partial_axis(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 uses axis "sp" which mesh @mesh_dp2_tp4 does not have}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []], partial = ["tp", "sp"]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_rank_too_small(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 has rank 1 but the value 'tensor<8x13xf32>' has rank 2}}
  %0 = rtx.relu %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"]]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_rank_too_large_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{sharding of result 0 has rank 1 but the value 'tensor<f32>' has rank 0}}
  %0 = rtx.exp %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[]]>} : tensor<f32>
  return %0 : tensor<f32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_single_sharding_multi_result(%x: tensor<8x24xf32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{a single 'rtx.sharding' needs an op with one result, this op has 2; give an array with one per result}}
  %0, %1 = rtx.split %x dim 1 {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>} : tensor<8x24xf32> -> tensor<8x12xf32>, tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @op_sharding_no_result(%x: tensor<8x24xf32>) {
  // expected-error @+1 {{a single 'rtx.sharding' needs an op with one result, this op has 0; give an array with one per result}}
  rtx.send %x to @mesh_pp4 ["pp"] peer 1 tag 0 {rtx.sharding = #rtx.sharding<@mesh_pp4, [[], []]>} : tensor<8x24xf32>
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_array_count(%x: tensor<8x24xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'rtx.sharding' has 2 shardings for 3 results}}
  %0, %1, %2 = rtx.split %x dim 1 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>, #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>]} : tensor<8x24xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_array_for_single_result(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{'rtx.sharding' has 0 shardings for 1 results}}
  %0 = rtx.relu %x {rtx.sharding = []} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_array_element_not_sharding(%x: tensor<8x24xf32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{'rtx.sharding' element 1 is not a #rtx.sharding: "dp"}}
  %0, %1 = rtx.split %x dim 1 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>, "dp"]} : tensor<8x24xf32> -> tensor<8x12xf32>, tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_array_element_invalid(%x: tensor<8x24xf32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{sharding of result 1 uses axis "sp" which mesh @mesh_dp2_tp4 does not have}}
  %0, %1 = rtx.split %x dim 1 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>, #rtx.sharding<@mesh_dp2_tp4, [["sp"], []]>]} : tensor<8x24xf32> -> tensor<8x12xf32>, tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_array_element_rank(%x: tensor<8x24xf32>) -> tensor<8x12xf32> {
  // expected-error @+1 {{sharding of result 1 has rank 3 but the value 'tensor<8x12xf32>' has rank 2}}
  %0, %1 = rtx.split %x dim 1 {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>, #rtx.sharding<@mesh_dp2_tp4, [[], [], []]>]} : tensor<8x24xf32> -> tensor<8x12xf32>, tensor<8x12xf32>
  return %0 : tensor<8x12xf32>
}

// -----

func.func @op_not_a_sharding(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{'rtx.sharding' must be a #rtx.sharding or an array of them, got 5 : i64}}
  %0 = rtx.relu %x {rtx.sharding = 5} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @op_non_tensor_result(%x: tensor<8x13xf32>) -> !rtx.token<tensor<8x13xf32>> {
  // expected-error @+1 {{sharding of result 0 describes a value of non-tensor type '!rtx.token<tensor<8x13xf32>>'}}
  %0 = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["tp"] sum {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[], []]>} : tensor<8x13xf32> -> !rtx.token<tensor<8x13xf32>>
  return %0 : !rtx.token<tensor<8x13xf32>>
}

// -----

// Shardings are checked on any op, not only rtx ones.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @non_rtx_op_unknown_axis(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error @+1 {{sharding of result 0 uses axis "x" which mesh @mesh_dp2_tp4 does not have}}
  %0 = arith.addf %x, %x {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["x"], []]>} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// The name is printed quoted twice ('"rtx.foo"'); the regex accepts the
// message with and without the extra quotes, and
// invalid-unknown-attr-message.mlir (XFAIL) checks the intended spelling.
func.func @unknown_rtx_attribute_on_op(%x: tensor<8x13xf32>) -> tensor<8x13xf32> {
  // expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.foo{{"?}}'}}
  %0 = rtx.relu %x {rtx.foo = 1 : i64} : tensor<8x13xf32>
  return %0 : tensor<8x13xf32>
}

// -----

// A misspelling of `rtx.sharding` is reported, not ignored.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.shardings{{"?}}'}}
func.func @unknown_rtx_attribute_on_func() attributes {rtx.shardings = #rtx.sharding<@mesh_dp2_tp4, []>} {
  return
}

// -----

//===----------------------------------------------------------------------===//
// `rtx.sharding` on function arguments and results
//===----------------------------------------------------------------------===//

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 1 refers to unknown mesh @mesh_dp4}}
func.func @arg_unknown_mesh(%x: tensor<8x13xf32>, %y: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp4, [["dp"], []]>}) {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 0 uses axis "sp" which mesh @mesh_dp2_tp4 does not have}}
func.func @arg_unknown_axis(%x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [[], ["sp"]]>}) {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 0 has rank 3 but the value 'tensor<8x13xf32>' has rank 2}}
func.func @arg_rank_mismatch(%x: tensor<8x13xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], [], []]>}) {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of argument 0 describes a value of non-tensor type 'i32'}}
func.func @arg_non_tensor(%x: i32 {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, []>}) {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{'rtx.sharding' on argument 0 must be a #rtx.sharding, got [#rtx.sharding<@mesh_dp2_tp4, [["dp"]]>]}}
func.func @arg_sharding_array(%x: tensor<8xf32> {rtx.sharding = [#rtx.sharding<@mesh_dp2_tp4, [["dp"]]>]}) {
  return
}

// -----

// expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.foo{{"?}}' on argument 0}}
func.func @arg_unknown_rtx_attribute(%x: tensor<8xf32> {rtx.foo = 1 : i64}) {
  return
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of function result 0 refers to unknown mesh @mesh_tp4}}
func.func @result_unknown_mesh() -> (tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_tp4, [["tp"]]>}) {
  %0 = rtx.constant dense<0.0> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of function result 1 uses axis "pp" which mesh @mesh_dp2_tp4 does not have}}
func.func @result_unknown_partial_axis() -> (tensor<8xf32>, tensor<f32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [], partial = ["pp"]>}) {
  %0 = rtx.constant dense<0.0> : tensor<8xf32>
  %1 = rtx.constant dense<0.0> : tensor<f32>
  return %0, %1 : tensor<8xf32>, tensor<f32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of function result 0 has rank 0 but the value 'tensor<8xf32>' has rank 1}}
func.func @result_rank_mismatch() -> (tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, []>}) {
  %0 = rtx.constant dense<0.0> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

// expected-error @+1 {{sharding of function result 0 describes a value of non-tensor type '!rtx.token'}}
func.func private @result_non_tensor() -> (!rtx.token {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, []>})

// -----

// expected-error @+1 {{'rtx.sharding' on function result 0 must be a #rtx.sharding, got "dp"}}
func.func private @result_not_a_sharding() -> (tensor<8xf32> {rtx.sharding = "dp"})

// -----

// expected-error-re @+1 {{unknown rtx attribute '{{"?}}rtx.foo{{"?}}' on function result 0}}
func.func private @result_unknown_rtx_attribute() -> (tensor<8xf32> {rtx.foo})
