// RUN: rtx-opt %s -split-input-file -rtx-test-op-interfaces -verify-diagnostics

// Regression test (fixed): EmbeddingGradOp::getShardingRule (RTXShardingRules.cpp) gives
// the token factors (the ids dimensions, shared by ids and dy) the kind
// Parallel. They appear in operands only -- the scatter-add sums dy over the
// token positions -- which is what FactorKind::Reduction means ("the factor
// appears in operands only: splitting it leaves partial sums in the
// results"), as for rtx.embedding's vocabulary and rtx.cross_entropy's tokens.
// getReductionFactors() therefore misses them. When it is fixed this test
// passes unexpectedly: fold it into interfaces-gradient-ops.mlir.

func.func @embedding_grad_rule(%ids: tensor<8x13xi32>, %dy: tensor<8x13x16xf32>) {
  // expected-remark @+1 {{rule: ([i, j], [i, j, k]) -> ([l, k]) {i=8, j=13, k=16, l=65} reduction={i, j}; flops: 1664; bytes: 11232}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<8x13xi32>, tensor<8x13x16xf32> -> tensor<65x16xf32>
  return
}

// -----

func.func @embedding_grad_rank1_ids_rule(%ids: tensor<13xi64>, %dy: tensor<13x7xbf16>) {
  // 91 FLOPs; 13*8 + 91*2 + 65*7*2 = 104 + 182 + 910 = 1196 bytes.
  // expected-remark @+1 {{rule: ([i], [i, j]) -> ([k, j]) {i=13, j=7, k=65} reduction={i}; flops: 91; bytes: 1196}}
  %0 = rtx.embedding_grad %ids, %dy : tensor<13xi64>, tensor<13x7xbf16> -> tensor<65x7xbf16>
  return
}
