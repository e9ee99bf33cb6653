// Every collective of the dialect in synchronous and started form, and
// send/recv in both forms, on a dp=2 x tp=2 mesh over a rank-dependent input
// (each rank holds its own 2x4 block of a 4x8 tensor). Every result is
// declared split over ["dp", "tp"] on dim 0, so the reassembled result holds
// each rank's own value and a difference on any rank shows.
//
// Started operations are waited in an order other than the one they started
// in, with computation in between, and the point-to-point part has every
// rank send to every group rank (itself included) before it receives: the
// SPMD pattern in which static peers match, and the one that deadlocks when
// sends wait for their receives.
rtx.mesh @mesh_dp2_tp2 ["dp"=2, "tp"=2]

func.func @main(%x: tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp"], ["tp"]]>})
    -> (tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x2xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<4x2xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<4x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<1x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<1x8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>},
        tensor<2x4xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp2, [["dp", "tp"], []]>}) {
  // Synchronous collectives.
  %ar = rtx.all_reduce %x on @mesh_dp2_tp2 ["dp", "tp"] sum : tensor<2x4xf32> -> tensor<2x4xf32>
  %am = rtx.all_reduce %x on @mesh_dp2_tp2 ["tp"] max : tensor<2x4xf32> -> tensor<2x4xf32>
  %ag = rtx.all_gather %x on @mesh_dp2_tp2 ["tp"] dim 1 : tensor<2x4xf32> -> tensor<2x8xf32>
  %rs = rtx.reduce_scatter %x on @mesh_dp2_tp2 ["dp"] sum dim 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %aa = rtx.all_to_all %x on @mesh_dp2_tp2 ["tp"] split 1 concat 0 : tensor<2x4xf32> -> tensor<4x2xf32>
  %bc = rtx.broadcast_from %x on @mesh_dp2_tp2 ["dp"] root 1 : tensor<2x4xf32> -> tensor<2x4xf32>
  %pm = rtx.permute %x on @mesh_dp2_tp2 ["dp", "tp"] [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<2x4xf32> -> tensor<2x4xf32>

  // Started collectives, waited out of order around computation.
  %t0 = rtx.all_reduce_start %x on @mesh_dp2_tp2 ["dp"] mean : tensor<2x4xf32> -> !rtx.token<tensor<2x4xf32>>
  %t1 = rtx.all_gather_start %x on @mesh_dp2_tp2 ["dp"] dim 0 : tensor<2x4xf32> -> !rtx.token<tensor<4x4xf32>>
  %sq = rtx.mul %x, %x : tensor<2x4xf32>
  %t2 = rtx.reduce_scatter_start %sq on @mesh_dp2_tp2 ["tp"] min dim 0 : tensor<2x4xf32> -> !rtx.token<tensor<1x4xf32>>
  %t3 = rtx.all_to_all_start %x on @mesh_dp2_tp2 ["dp"] split 0 concat 1 : tensor<2x4xf32> -> !rtx.token<tensor<1x8xf32>>
  %t4 = rtx.broadcast_from_start %sq on @mesh_dp2_tp2 ["tp"] root 0 : tensor<2x4xf32> -> !rtx.token<tensor<2x4xf32>>
  %t5 = rtx.permute_start %x on @mesh_dp2_tp2 ["tp"] [0 -> 1, 1 -> 0] : tensor<2x4xf32> -> !rtx.token<tensor<2x4xf32>>
  %w3 = rtx.wait %t3 : !rtx.token<tensor<1x8xf32>> -> tensor<1x8xf32>
  %w1 = rtx.wait %t1 : !rtx.token<tensor<4x4xf32>> -> tensor<4x4xf32>
  %w5 = rtx.wait %t5 : !rtx.token<tensor<2x4xf32>> -> tensor<2x4xf32>
  %w0 = rtx.wait %t0 : !rtx.token<tensor<2x4xf32>> -> tensor<2x4xf32>
  %w4 = rtx.wait %t4 : !rtx.token<tensor<2x4xf32>> -> tensor<2x4xf32>
  %w2 = rtx.wait %t2 : !rtx.token<tensor<1x4xf32>> -> tensor<1x4xf32>
  %s5 = rtx.add %w5, %sq : tensor<2x4xf32>

  // Point to point within tp pairs: every rank sends to both group ranks
  // (synchronously to 0, started to 1), then receives from both.
  rtx.send %x to @mesh_dp2_tp2 ["tp"] peer 0 tag 3 : tensor<2x4xf32>
  %ts = rtx.send_start %sq to @mesh_dp2_tp2 ["tp"] peer 1 tag 3 : tensor<2x4xf32> -> !rtx.token
  %tr = rtx.recv_start from @mesh_dp2_tp2 ["tp"] peer 1 tag 3 -> !rtx.token<tensor<2x4xf32>>
  %r0 = rtx.recv from @mesh_dp2_tp2 ["tp"] peer 0 tag 3 : tensor<2x4xf32>
  %r1 = rtx.wait %tr : !rtx.token<tensor<2x4xf32>> -> tensor<2x4xf32>
  rtx.wait %ts : !rtx.token
  // Across dp (other processes than tp's), synchronous both ways.
  rtx.send %sq to @mesh_dp2_tp2 ["dp"] peer 0 tag 0 : tensor<2x4xf32>
  rtx.send %x to @mesh_dp2_tp2 ["dp"] peer 1 tag 0 : tensor<2x4xf32>
  %d1 = rtx.recv from @mesh_dp2_tp2 ["dp"] peer 1 tag 0 : tensor<2x4xf32>
  %d0 = rtx.recv from @mesh_dp2_tp2 ["dp"] peer 0 tag 0 : tensor<2x4xf32>

  return %ar, %am, %ag, %rs, %aa, %bc, %pm, %w0, %w1, %w2, %w3, %w4, %s5, %r0, %r1, %d0, %d1
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x8xf32>, tensor<2x2xf32>, tensor<4x2xf32>,
        tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<1x4xf32>,
        tensor<1x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>,
        tensor<2x4xf32>, tensor<2x4xf32>
}
