// Each collective on a dp=2 x tp=2 mesh, checked against its single-device
// meaning (Inputs/collectives-ref.mlir) with rtx-run --compare, whose
// reference is a sequential computation on one rank.
//
// RUN: for f in all_gather all_reduce_sum all_reduce_mean reduce_scatter all_to_all partial_sum broadcast_from; do \
// RUN:   rtx-run --compare %S/Inputs/collectives-ref.mlir %s --ranks 4 --random --entry $f --tolerance 0 || exit 1; \
// RUN: done | FileCheck %s
// CHECK-COUNT-7: result 0: {{.*}} max_abs=0.000e+00 rel_norm=0.000e+00 tolerance=0.0e+00 PASS

rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

// Rows split over tp, gathered back: every rank holds the whole tensor.
func.func @all_gather(%x: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>})
    -> tensor<8x6xf32> {
  %y = rtx.all_gather %x on @mesh_dp2_tp2 ["tp"] dim 0 : tensor<4x6xf32> -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

// A replicated value summed over all 4 ranks is 4x.
func.func @all_reduce_sum(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %y = rtx.all_reduce %x on @mesh_dp2_tp2 ["dp", "tp"] sum : tensor<8x6xf32> -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

func.func @all_reduce_mean(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %y = rtx.all_reduce %x on @mesh_dp2_tp2 ["tp"] mean : tensor<8x6xf32> -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

// A replicated value reduce-scattered over dp: 2x, rows split over dp.
func.func @reduce_scatter(%x: tensor<8x6xf32>)
    -> (tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], []]>}) {
  %y = rtx.reduce_scatter %x on @mesh_dp2_tp2 ["dp"] sum dim 0 : tensor<8x6xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// Rows split over tp become columns split over tp.
func.func @all_to_all(%x: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>})
    -> (tensor<8x3xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], ["tp"]]>}) {
  %y = rtx.all_to_all %x on @mesh_dp2_tp2 ["tp"] split 1 concat 0 : tensor<4x6xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// A result that is a partial sum over dp is reassembled by adding the ranks'
// values: x on every rank, partial over dp, means 2x.
func.func @partial_sum(%x: tensor<8x6xf32>)
    -> (tensor<8x6xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [[], []], partial = ["dp"]>}) {
  return %x : tensor<8x6xf32>
}

// Group rank 1 of tp holds rows 4..8; after the broadcast every rank has them.
func.func @broadcast_from(%x: tensor<4x6xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["tp"], []]>})
    -> tensor<4x6xf32> {
  %y = rtx.broadcast_from %x on @mesh_dp2_tp2 ["tp"] root 1 : tensor<4x6xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
