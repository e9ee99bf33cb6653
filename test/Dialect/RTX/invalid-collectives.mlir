// RUN: rtx-opt %s -split-input-file -verify-diagnostics

// Collectives, their `*_start` forms, and point-to-point ops. The checks are
// shared (RTXCollectives.cpp), so each is exercised on one or two kinds.

func.func @unknown_mesh(%x: tensor<4x2xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.all_gather' op refers to unknown mesh @mesh_nope}}
  %0 = rtx.all_gather %x on @mesh_nope ["tp"] dim 1 : tensor<4x2xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A symbol that is not a mesh.
func.func @not_a_mesh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.all_reduce' op refers to unknown mesh @not_a_mesh}}
  %0 = rtx.all_reduce %x on @not_a_mesh ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @recv_unknown_mesh() -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.recv' op refers to unknown mesh @mesh_pp4}}
  %0 = rtx.recv from @mesh_pp4 ["pp"] peer 0 tag 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @no_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.all_reduce' op needs at least one mesh axis}}
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 [] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @unknown_axis(%x: tensor<4x8xf32>) -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.all_reduce_start' op uses axis "pp" which mesh @mesh_dp2_tp4 does not have}}
  %0 = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["dp", "pp"] sum : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @axis_twice(%x: tensor<4x2xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'rtx.all_gather' op lists axis "tp" twice}}
  %0 = rtx.all_gather %x on @mesh_dp2_tp4 ["tp", "tp"] dim 1 : tensor<4x2xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @start_token_without_value(%x: tensor<4x8xf32>) -> !rtx.token {
  // expected-error @+1 {{'rtx.all_reduce_start' op token must carry the tensor type the collective produces}}
  %0 = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> !rtx.token
  return %0 : !rtx.token
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @recv_start_token_without_value() -> !rtx.token {
  // expected-error @+1 {{'rtx.recv_start' op token must carry the tensor type the collective produces}}
  %0 = rtx.recv_start from @mesh_pp4 ["pp"] peer 0 tag 0 -> !rtx.token
  return %0 : !rtx.token
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @start_token_non_tensor_value(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{a token carries a ranked tensor type or nothing, got 'i32'}}
  %0 = rtx.permute_start %x on @mesh_dp2_tp4 ["tp"] [0 -> 1] : tensor<4x8xf32> -> !rtx.token<i32>
  return
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @send_start_token_with_value(%x: tensor<4x8xf32>) -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.send_start' op a send's token carries no value}}
  %0 = rtx.send_start %x to @mesh_pp4 ["pp"] peer 1 tag 0 : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @send_peer_outside_group(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'rtx.send' op peer 4 is outside the group of 4 ranks over ["pp"]}}
  rtx.send %x to @mesh_pp4 ["pp"] peer 4 tag 0 : tensor<4x8xf32>
  return
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @recv_negative_peer() -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.recv' op peer -1 is outside the group of 4 ranks over ["pp"]}}
  %0 = rtx.recv from @mesh_pp4 ["pp"] peer -1 tag 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// The group of a two-axis list has 2 * 4 = 8 ranks.
rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @send_start_peer_outside_group(%x: tensor<4x8xf32>) -> !rtx.token {
  // expected-error @+1 {{'rtx.send_start' op peer 8 is outside the group of 8 ranks over ["dp", "tp"]}}
  %0 = rtx.send_start %x to @mesh_dp2_tp4 ["dp", "tp"] peer 8 tag 0 : tensor<4x8xf32> -> !rtx.token
  return %0 : !rtx.token
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @recv_start_peer_outside_group() -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.recv_start' op peer 2 is outside the group of 2 ranks over ["dp"]}}
  %0 = rtx.recv_start from @mesh_dp2_tp4 ["dp"] peer 2 tag 0 -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @result_element_type(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'rtx.all_reduce' op result element type 'bf16' differs from the input's 'f32'}}
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @start_token_element_type(%x: tensor<4x2xf32>) -> !rtx.token<tensor<4x8xf16>> {
  // expected-error @+1 {{'rtx.all_gather_start' op result element type 'f16' differs from the input's 'f32'}}
  %0 = rtx.all_gather_start %x on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> !rtx.token<tensor<4x8xf16>>
  return %0 : !rtx.token<tensor<4x8xf16>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @all_reduce_result_shape(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'rtx.all_reduce' op result shape [4, 2] does not match [4, 8], the shape it produces from input [4, 8] over ["tp"] (4 ranks)}}
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @all_gather_dim_out_of_range(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'rtx.all_gather' op gather dim 2 is out of range for a tensor of rank 2}}
  %0 = rtx.all_gather %x on @mesh_dp2_tp4 ["tp"] dim 2 : tensor<4x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @all_gather_result_shape(%x: tensor<4x2xf32>) -> tensor<4x8xf32> {
  // Gathering over both axes multiplies by 8, not 4.
  // expected-error @+1 {{'rtx.all_gather' op result shape [4, 8] does not match [4, 16], the shape it produces from input [4, 2] over ["dp", "tp"] (8 ranks)}}
  %0 = rtx.all_gather %x on @mesh_dp2_tp4 ["dp", "tp"] dim 1 : tensor<4x2xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @all_gather_start_result_shape(%x: tensor<4x2xf32>) -> !rtx.token<tensor<16x2xf32>> {
  // expected-error @+1 {{'rtx.all_gather_start' op result shape [16, 2] does not match [4, 8], the shape it produces from input [4, 2] over ["tp"] (4 ranks)}}
  %0 = rtx.all_gather_start %x on @mesh_dp2_tp4 ["tp"] dim 1 : tensor<4x2xf32> -> !rtx.token<tensor<16x2xf32>>
  return %0 : !rtx.token<tensor<16x2xf32>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @reduce_scatter_negative_dim(%x: tensor<8x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rtx.reduce_scatter' op scatter dim -1 is out of range for a tensor of rank 2}}
  %0 = rtx.reduce_scatter %x on @mesh_dp2_tp4 ["tp"] sum dim -1 : tensor<8x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @reduce_scatter_not_divisible(%x: tensor<7x8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'rtx.reduce_scatter' op scatter dim 0 of size 7 is not divisible by the group size 4 over ["tp"]}}
  %0 = rtx.reduce_scatter %x on @mesh_dp2_tp4 ["tp"] sum dim 0 : tensor<7x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @reduce_scatter_start_result_shape(%x: tensor<8x8xf32>) -> !rtx.token<tensor<8x2xf32>> {
  // expected-error @+1 {{'rtx.reduce_scatter_start' op result shape [8, 2] does not match [2, 8], the shape it produces from input [8, 8] over ["tp"] (4 ranks)}}
  %0 = rtx.reduce_scatter_start %x on @mesh_dp2_tp4 ["tp"] sum dim 0 : tensor<8x8xf32> -> !rtx.token<tensor<8x2xf32>>
  return %0 : !rtx.token<tensor<8x2xf32>>
}

// -----

rtx.mesh @mesh_sp4 ["sp"=4]

func.func @all_to_all_split_dim_out_of_range(%x: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'rtx.all_to_all' op split dim 4 is out of range for a tensor of rank 4}}
  %0 = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 4 concat 2 : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %0 : tensor<2x8x4x16xf32>
}

// -----

rtx.mesh @mesh_sp4 ["sp"=4]

func.func @all_to_all_concat_dim_out_of_range(%x: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{'rtx.all_to_all' op concat dim -2 is out of range for a tensor of rank 4}}
  %0 = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 1 concat -2 : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %0 : tensor<2x8x4x16xf32>
}

// -----

rtx.mesh @mesh_sp4 ["sp"=4]

func.func @all_to_all_not_divisible(%x: tensor<2x6x4x16xf32>) -> tensor<2x1x16x16xf32> {
  // expected-error @+1 {{'rtx.all_to_all' op split dim 1 of size 6 is not divisible by the group size 4 over ["sp"]}}
  %0 = rtx.all_to_all %x on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x6x4x16xf32> -> tensor<2x1x16x16xf32>
  return %0 : tensor<2x1x16x16xf32>
}

// -----

// Split and concat dimensions swapped in the result type.
rtx.mesh @mesh_sp4 ["sp"=4]

func.func @all_to_all_start_result_shape(%x: tensor<2x8x4x16xf32>) -> !rtx.token<tensor<2x32x1x16xf32>> {
  // expected-error @+1 {{'rtx.all_to_all_start' op result shape [2, 32, 1, 16] does not match [2, 2, 16, 16], the shape it produces from input [2, 8, 4, 16] over ["sp"] (4 ranks)}}
  %0 = rtx.all_to_all_start %x on @mesh_sp4 ["sp"] split 1 concat 2 : tensor<2x8x4x16xf32> -> !rtx.token<tensor<2x32x1x16xf32>>
  return %0 : !rtx.token<tensor<2x32x1x16xf32>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @broadcast_from_root_outside_group(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.broadcast_from' op root 2 is outside the group of 2 ranks over ["dp"]}}
  %0 = rtx.broadcast_from %x on @mesh_dp2_tp4 ["dp"] root 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @broadcast_from_start_negative_root(%x: tensor<4x8xf32>) -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.broadcast_from_start' op root -1 is outside the group of 4 ranks over ["tp"]}}
  %0 = rtx.broadcast_from_start %x on @mesh_dp2_tp4 ["tp"] root -1 : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @broadcast_from_result_shape(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'rtx.broadcast_from' op result shape [8, 8] does not match [4, 8], the shape it produces from input [4, 8] over ["dp"] (2 ranks)}}
  %0 = rtx.broadcast_from %x on @mesh_dp2_tp4 ["dp"] root 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// Only the generic form can hold an odd number of pair entries.
rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_odd_pairs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.permute' op pairs must hold source/target pairs}}
  %0 = "rtx.permute"(%x) <{mesh = @mesh_pp4, axes = ["pp"], pairs = array<i64: 0, 1, 2>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_rank_outside_group(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.permute' op pair 3 -> 4 names a rank outside the group of 4 ranks over ["pp"]}}
  %0 = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1, 3 -> 4] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_negative_source(%x: tensor<4x8xf32>) -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.permute_start' op pair -1 -> 0 names a rank outside the group of 4 ranks over ["pp"]}}
  %0 = rtx.permute_start %x on @mesh_pp4 ["pp"] [-1 -> 0] : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_source_twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.permute' op source 0 appears twice}}
  %0 = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1, 0 -> 2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_target_twice(%x: tensor<4x8xf32>) -> !rtx.token<tensor<4x8xf32>> {
  // expected-error @+1 {{'rtx.permute_start' op target 1 appears twice}}
  %0 = rtx.permute_start %x on @mesh_pp4 ["pp"] [0 -> 1, 2 -> 1] : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
  return %0 : !rtx.token<tensor<4x8xf32>>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_result_shape(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'rtx.permute' op result shape [8, 4] does not match [4, 8], the shape it produces from input [4, 8] over ["pp"] (4 ranks)}}
  %0 = rtx.permute %x on @mesh_pp4 ["pp"] [0 -> 1] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

rtx.mesh @mesh_pp4 ["pp"=4]

func.func @permute_missing_arrow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected '->'}}
  %0 = rtx.permute %x on @mesh_pp4 ["pp"] [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @collective_dynamic_shape(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rtx.all_reduce' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x8xf32>'}}
  %0 = rtx.all_reduce %x on @mesh_dp2_tp4 ["tp"] sum : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @collective_start_tensor_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // The constraint text comes from the token type's summary, so it reads
  // "must be links an async collective's start to its wait": only the stable
  // parts are checked.
  // expected-error-re @+1 {{'rtx.all_reduce_start' op result #0 must be {{.*}}, but got 'tensor<4x8xf32>'}}
  %0 = rtx.all_reduce_start %x on @mesh_dp2_tp4 ["tp"] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]

func.func @collective_axes_not_strings(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rtx.broadcast_from' op attribute 'axes' failed to satisfy constraint: string array attribute}}
  %0 = "rtx.broadcast_from"(%x) <{mesh = @mesh_dp2_tp4, axes = [0], root = 0 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
