// The vocab-parallel forms on a vocabulary of 12 split over tp=4 (3 rows or
// classes per rank), run by rtx-run on 4 ranks, equal the plain ops on one
// (Inputs/vocab-parallel-ref.mlir), on random ids, labels and values.
//
// RUN: for f in embedding embedding_grad loss; do \
// RUN:   rtx-run --compare %S/Inputs/vocab-parallel-ref.mlir %s --ranks 4 --random --entry $f || exit 1; \
// RUN: done | FileCheck %s
// CHECK: result 0: tensor<4x7x5xf32> {{.*}} PASS
// CHECK: result 0: tensor<12x5xf32> {{.*}} PASS
// CHECK: result 0: tensor<f32> {{.*}} PASS
// CHECK: result 1: tensor<4x7x12xf32> {{.*}} PASS
//
// Without the vocabulary offset each rank would read global ids as rows of
// its shard: the kernel rejects them.
// RUN: sed 's/ vocab on @mesh_tp4 \["tp"\]//' %s > %t.no-offset.mlir
// RUN: not rtx-run --compare %S/Inputs/vocab-parallel-ref.mlir %t.no-offset.mlir --ranks 4 --random --entry embedding_grad 2>&1 | FileCheck %s --check-prefix=WRONG
// WRONG: rtx.embedding_grad: id {{[0-9]+}} at index {{.*}} is outside [0, 3)

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @embedding(%t: tensor<3x5xf32> {rtx.sharding = #rtx.sharding<@mesh_tp4, [["tp"], []]>},
                     %ids: tensor<4x7xi32>) -> tensor<4x7x5xf32> {
  %e = rtx.embedding %t, %ids vocab on @mesh_tp4 ["tp"] : tensor<3x5xf32>, tensor<4x7xi32> -> tensor<4x7x5xf32>
  %r = rtx.all_reduce %e on @mesh_tp4 ["tp"] sum : tensor<4x7x5xf32> -> tensor<4x7x5xf32>
  return %r : tensor<4x7x5xf32>
}

func.func @embedding_grad(%ids: tensor<4x7xi32>, %dy: tensor<4x7x5xf32>)
    -> (tensor<3x5xf32> {rtx.sharding = #rtx.sharding<@mesh_tp4, [["tp"], []]>}) {
  %d = rtx.embedding_grad %ids, %dy vocab on @mesh_tp4 ["tp"] : tensor<4x7xi32>, tensor<4x7x5xf32> -> tensor<3x5xf32>
  return %d : tensor<3x5xf32>
}

func.func @loss(%logits: tensor<4x7x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp4, [[], [], ["tp"]]>},
                %labels: tensor<4x7xi32>)
    -> (tensor<f32>, tensor<4x7x3xf32> {rtx.sharding = #rtx.sharding<@mesh_tp4, [[], [], ["tp"]]>}) {
  %max, %label = rtx.vocab_logit_stats %logits, %labels on @mesh_tp4 ["tp"] : tensor<4x7x3xf32>, tensor<4x7xi32> -> tensor<4x7xf32>, tensor<4x7xf32>
  %gmax = rtx.all_reduce %max on @mesh_tp4 ["tp"] max : tensor<4x7xf32> -> tensor<4x7xf32>
  %glabel = rtx.all_reduce %label on @mesh_tp4 ["tp"] sum : tensor<4x7xf32> -> tensor<4x7xf32>
  %b = rtx.broadcast %gmax dims [0, 1] : tensor<4x7xf32> -> tensor<4x7x3xf32>
  %s = rtx.sub %logits, %b : tensor<4x7x3xf32>
  %e = rtx.exp %s : tensor<4x7x3xf32>
  %psum = rtx.reduce sum %e dims [2] : tensor<4x7x3xf32> -> tensor<4x7xf32>
  %sum = rtx.all_reduce %psum on @mesh_tp4 ["tp"] sum : tensor<4x7xf32> -> tensor<4x7xf32>
  %loss = rtx.vocab_cross_entropy %gmax, %sum, %glabel, %labels : tensor<4x7xf32>, tensor<4x7xi32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %d = rtx.vocab_cross_entropy_grad %logits, %labels, %one, %gmax, %sum on @mesh_tp4 ["tp"] : tensor<4x7x3xf32>, tensor<4x7xi32>, tensor<f32>, tensor<4x7xf32>
  return %loss, %d : tensor<f32>, tensor<4x7x3xf32>
}
