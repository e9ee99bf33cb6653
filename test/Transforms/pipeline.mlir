// RUN: rtx-opt %s -rtx-split-stages=stages=2 -rtx-autodiff -rtx-optimizer=kind=sgd -rtx-add-mesh=mesh=pp:2 -rtx-propagate-sharding -rtx-partition '-rtx-pipeline=schedule=gpipe micro-batches=2' | FileCheck %s --check-prefix=GPIPE
// RUN: rtx-opt %s -rtx-split-stages=stages=2 -rtx-autodiff -rtx-optimizer=kind=sgd -rtx-add-mesh=mesh=pp:2 -rtx-propagate-sharding -rtx-partition '-rtx-pipeline=schedule=zb-h1 micro-batches=2' | FileCheck %s --check-prefix=ZB
// RUN: rtx-opt %s -rtx-split-stages=stages=4 -rtx-autodiff -rtx-optimizer=kind=sgd -rtx-add-mesh=mesh=pp:2 -rtx-propagate-sharding -rtx-partition '-rtx-pipeline=schedule=interleaved micro-batches=2 virtual=2' | FileCheck %s --check-prefix=VIRTUAL

// The weight w is used by both stages (tied, like GPT-2's wte). GPipe on 2
// ranks, 2 micro-batches: rank 0 runs 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0
// 0RECV_B1 0B1 0REDUCE_GRAD OPTIMIZER. Each micro-batch is every other row
// of the twice as large batch; activations go forward and gradients back
// with their own tags; the two stages exchange their sums of w's gradient
// and both add them in the same order (the other stage's first on rank 0,
// its own first on rank 1: the step's order, stage 1's contribution first),
// so both copies of w get the same update.
// GPIPE-LABEL: func.func @tied_pp0(
// GPIPE-SAME:    rtx.param = "w"
// GPIPE-SAME:    rtx.step_result = 1
// GPIPE-SAME:    rtx.pipeline_axis = "pp", rtx.pipeline_rank = 0
// GPIPE:         %[[X:.*]] = rtx.input "x" {{.*}}: tensor<8x8xf32>
// GPIPE:         rtx.slice {{.*}}[0:4, 0:1, 0:8]
// GPIPE:         %[[A0:.*]] = rtx.tanh
// GPIPE:         rtx.send_start %[[A0]] to @mesh_pp2 ["pp"] peer 1 tag 0
// GPIPE:         rtx.slice {{.*}}[0:4, 1:2, 0:8]
// GPIPE:         %[[A1:.*]] = rtx.tanh
// GPIPE:         rtx.send_start %[[A1]] to @mesh_pp2 ["pp"] peer 1 tag 1
// GPIPE:         rtx.recv from @mesh_pp2 ["pp"] peer 1 tag 2
// GPIPE:         rtx.recv from @mesh_pp2 ["pp"] peer 1 tag 3
// GPIPE:         %[[SUM:.*]] = rtx.add
// GPIPE:         %[[MEAN:.*]] = rtx.mul %[[SUM]], {{.*}} : tensor<8x8xf32>
// GPIPE:         rtx.send_start %[[MEAN]] to @mesh_pp2 ["pp"] peer 1 tag 5
// GPIPE:         %[[OTHER:.*]] = rtx.recv from @mesh_pp2 ["pp"] peer 1 tag 4
// GPIPE:         %[[G:.*]] = rtx.add %[[OTHER]], %[[MEAN]]
// GPIPE:         rtx.sgd_update %arg0, %[[G]]
// GPIPE-COUNT-3: rtx.wait
// GPIPE-LABEL: func.func @tied_pp1(
// GPIPE-SAME:    rtx.step_result = 0
// GPIPE-SAME:    rtx.step_result = 1
// GPIPE:         rtx.recv from @mesh_pp2 ["pp"] peer 0 tag 0
// GPIPE:         rtx.recv from @mesh_pp2 ["pp"] peer 0 tag 1
// GPIPE:         rtx.send_start {{.*}} peer 0 tag 2
// GPIPE:         rtx.send_start {{.*}} peer 0 tag 3
// GPIPE:         %[[MEAN1:.*]] = rtx.mul {{.*}} : tensor<8x8xf32>
// GPIPE:         rtx.send_start %[[MEAN1]] to @mesh_pp2 ["pp"] peer 0 tag 4
// GPIPE:         %[[OTHER1:.*]] = rtx.recv from @mesh_pp2 ["pp"] peer 0 tag 5
// GPIPE:         %[[G1:.*]] = rtx.add %[[MEAN1]], %[[OTHER1]]
// GPIPE:         rtx.sgd_update %arg0, %[[G1]]

// ZB-H1 splits the last stage's backward: B computes the gradient that
// goes back (x w^T) and sends it, W the weight gradient (x^T g) after it.
// ZB-LABEL: func.func @tied_pp1(
// ZB:         rtx.matmul {{.*}} transpose_rhs
// ZB-NEXT:    rtx.send_start
// ZB:         rtx.matmul {{.*}} transpose_lhs

// Four stages on two ranks: rank 0 runs stages 0 and 2, and sends to rank
// 1 only (stage 0 to 1, stage 2 to 3), and rank 1 back.
// VIRTUAL-LABEL: func.func @tied_pp0(
// VIRTUAL-SAME:    rtx.virtual_stages = 2
// VIRTUAL-NOT:     peer 0
// VIRTUAL-LABEL: func.func @tied_pp1(
// VIRTUAL-NOT:     peer 1
// VIRTUAL:         return
func.func @tied() -> tensor<f32> {
  %x = rtx.input "x" : tensor<4x8xf32>
  %w = rtx.param "w" normal(0.0, 0.1) : tensor<8x8xf32>
  %a = rtx.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = rtx.tanh %a : tensor<4x8xf32>
  %c = rtx.matmul %b, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %d = rtx.mul %c, %c : tensor<4x8xf32>
  %l = rtx.reduce mean %d dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
