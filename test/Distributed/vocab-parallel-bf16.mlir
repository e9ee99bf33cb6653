// A bf16 language-model head with its vocabulary split over tp (hand-written
// seeds): the partitioned loss and gradients upcast the logits to f32 for
// the softmax statistics, as the single-device kernels compute in f32 or
// better, and equal the single-device program on 4 ranks.
//
// RUN: rtx-opt %s -rtx-propagate-sharding -rtx-partition -rtx-verify-distribution -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// The same program without shardings is the single-device reference.
// RUN: sed -e 's/ {rtx.sharding = [^}]*}//g' -e '/rtx.mesh/d' %s > %t.ref.mlir
// RUN: rtx-run --compare %t.ref.mlir %t.mlir --ranks 4 --random | FileCheck %s --check-prefix=COMPARE
// CHECK: rtx.convert %{{.*}} : tensor<15x3xbf16> -> tensor<15x3xf32>
// CHECK: rtx.vocab_logit_stats %{{.*}} : tensor<15x3xf32>
// CHECK: rtx.vocab_cross_entropy_grad %{{.*}} : tensor<15x3xf32>
// CHECK-NEXT: rtx.convert %{{.*}} : tensor<15x3xf32> -> tensor<15x3xbf16>
// COMPARE-COUNT-3: PASS

rtx.mesh @mesh_tp4 ["tp"=4]

func.func @lm_head(%h: tensor<15x8xbf16>, %labels: tensor<15xi32>) -> (tensor<f32>, tensor<15x8xbf16>, tensor<12x8xbf16>) {
  %w = rtx.param "head.weight" normal(0.0, 1.0) {rtx.sharding = #rtx.sharding<@mesh_tp4, [["tp"], []]>} : tensor<12x8xbf16>
  %logits = rtx.linear %h, %w : tensor<15x8xbf16>, tensor<12x8xbf16> -> tensor<15x12xbf16>
  %loss = rtx.cross_entropy %logits, %labels : tensor<15x12xbf16>, tensor<15xi32> -> tensor<f32>
  %one = rtx.constant dense<1.0> : tensor<f32>
  %dlogits = rtx.cross_entropy_grad %logits, %labels, %one : tensor<15x12xbf16>, tensor<15xi32>, tensor<f32>
  %dh = rtx.matmul %dlogits, %w : tensor<15x12xbf16>, tensor<12x8xbf16> -> tensor<15x8xbf16>
  %dw = rtx.matmul %dlogits, %h transpose_lhs : tensor<15x12xbf16>, tensor<15x8xbf16> -> tensor<12x8xbf16>
  return %loss, %dh, %dw : tensor<f32>, tensor<15x8xbf16>, tensor<12x8xbf16>
}
