//===- InterfacesTest.cpp - sharding rules and costs ----------------------===//
//
// The expected values are computed by hand from the op definitions, not read
// back from the implementation.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {

class InterfacesTest : public RTXTest {
protected:
  /// Parses a function body of one op (plus its arguments) and returns it.
  template <typename OpTy> OpTy parseOp(llvm::StringRef text) {
    module = parse(text);
    EXPECT_TRUE(module) << diagnostics;
    return module ? first<OpTy>(*module) : OpTy();
  }
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterfacesTest, MatmulRuleAndFlops) {
  auto op = parseOp<MatmulOp>(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
      %c = rtx.matmul %a, %b : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
      return %c : tensor<4x16xf32>
    })mlir");
  ASSERT_TRUE(op);
  OpShardingRule rule = op.getShardingRule();
  ASSERT_EQ(rule.getNumFactors(), 3);
  // lhs [M, K], rhs [K, N], result [M, N]; K is contracted.
  int64_t m = rule.operandFactors[0][0][0], k = rule.operandFactors[0][1][0];
  int64_t n = rule.operandFactors[1][1][0];
  EXPECT_EQ(rule.operandFactors[1][0][0], k);
  EXPECT_EQ(rule.resultFactors[0][0][0], m);
  EXPECT_EQ(rule.resultFactors[0][1][0], n);
  EXPECT_EQ(rule.factorSizes[m], 4);
  EXPECT_EQ(rule.factorSizes[n], 16);
  EXPECT_EQ(rule.factorSizes[k], 8);
  EXPECT_EQ(rule.getReductionFactors(), SmallVector<int64_t>{k});
  EXPECT_EQ(rule.str(),
            "([i, k], [k, j]) -> ([i, j]) {i=4, j=16, k=8} reduction={k}");
  // 2 * M * N * K.
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getFlops(),
            2 * 4 * 16 * 8);
  // (4*8 + 8*16 + 4*16) f32 elements.
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getBytesAccessed(),
            4 * (32 + 128 + 64));
}

TEST_F(InterfacesTest, TransposedMatmulMovesTheContractedFactor) {
  auto op = parseOp<MatmulOp>(R"mlir(
    func.func @f(%a: tensor<8x4xf32>, %b: tensor<16x8xf32>) -> tensor<4x16xf32> {
      %c = rtx.matmul %a, %b transpose_lhs transpose_rhs
          : tensor<8x4xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
      return %c : tensor<4x16xf32>
    })mlir");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getShardingRule().str(),
            "([k, i], [j, k]) -> ([i, j]) {i=4, j=16, k=8} reduction={k}");
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getFlops(), 1024);
}

TEST_F(InterfacesTest, GroupedCausalAttentionRuleAndFlops) {
  auto op = parseOp<AttentionOp>(R"mlir(
    func.func @f(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>,
                 %v: tensor<2x2x16x64xf32>) -> tensor<2x8x16x64xf32> {
      %o = rtx.attention %q, %k, %v causal
          : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>
            -> tensor<2x8x16x64xf32>
      return %o : tensor<2x8x16x64xf32>
    })mlir");
  ASSERT_TRUE(op);
  OpShardingRule rule = op.getShardingRule();
  // Query heads 8 = 2 kv heads x 4 query heads per group: splitting heads
  // splits the kv-head factor first, so a query head stays with its kv head.
  ASSERT_EQ(rule.operandFactors[0][1].size(), 2u);
  int64_t kvHeads = rule.operandFactors[0][1][0];
  int64_t group = rule.operandFactors[0][1][1];
  EXPECT_EQ(rule.factorSizes[kvHeads], 2);
  EXPECT_EQ(rule.factorSizes[group], 4);
  EXPECT_EQ(rule.operandFactors[1][1], OpShardingRule::DimFactors{kvHeads});
  EXPECT_EQ(rule.resultFactors[0][1],
            (OpShardingRule::DimFactors{kvHeads, group}));
  // Batch and heads are parallel; causal query sequence, key sequence and
  // head_dim must stay whole.
  EXPECT_EQ(rule.factorKinds[rule.operandFactors[0][0][0]],
            FactorKind::Parallel);
  EXPECT_EQ(rule.factorKinds[kvHeads], FactorKind::Parallel);
  EXPECT_EQ(rule.factorKinds[rule.operandFactors[0][2][0]],
            FactorKind::NeedReplication);
  EXPECT_EQ(rule.factorKinds[rule.operandFactors[1][2][0]],
            FactorKind::NeedReplication);
  EXPECT_EQ(rule.factorKinds[rule.operandFactors[0][3][0]],
            FactorKind::NeedReplication);
  // Causal: 16*17/2 = 136 (query, key) pairs per head; 2*8 = 16 heads in all.
  // 4 * 16 * 136 * 64 for the two products + 5 * 16 * 136 for the softmax.
  int64_t scores = 2 * 8 * 136;
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getFlops(),
            4 * scores * 64 + 5 * scores);
}

TEST_F(InterfacesTest, NonCausalAttentionCountsAllPairs) {
  auto op = parseOp<AttentionOp>(R"mlir(
    func.func @f(%q: tensor<1x4x7x8xf32>, %k: tensor<1x4x13x8xf32>,
                 %v: tensor<1x4x13x8xf32>) -> tensor<1x4x7x8xf32> {
      %o = rtx.attention %q, %k, %v
          : tensor<1x4x7x8xf32>, tensor<1x4x13x8xf32>, tensor<1x4x13x8xf32>
            -> tensor<1x4x7x8xf32>
      return %o : tensor<1x4x7x8xf32>
    })mlir");
  ASSERT_TRUE(op);
  int64_t scores = 1 * 4 * 7 * 13;
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getFlops(),
            4 * scores * 8 + 5 * scores);
  // Without a causal mask the query sequence may be split.
  OpShardingRule rule = op.getShardingRule();
  EXPECT_EQ(rule.factorKinds[rule.operandFactors[0][2][0]],
            FactorKind::Parallel);
  EXPECT_DOUBLE_EQ(op.getEffectiveScale(), 1.0 / std::sqrt(8.0));
}

TEST_F(InterfacesTest, LayerNormRuleAndFlops) {
  auto op = parseOp<LayerNormOp>(R"mlir(
    func.func @f(%x: tensor<3x5x7xf32>, %g: tensor<7xf32>, %b: tensor<7xf32>)
        -> tensor<3x5x7xf32> {
      %y = rtx.layernorm %x, %g, %b eps 1.0e-05
          : tensor<3x5x7xf32>, tensor<7xf32>, tensor<7xf32>
      return %y : tensor<3x5x7xf32>
    })mlir");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getShardingRule().str(),
            "([i, j, k], [k], [k]) -> ([i, j, k]) {i=3, j=5, k=7} "
            "need_replication={k}");
  // 7 FLOPs per element + 1 for the bias, 105 elements.
  EXPECT_EQ(cast<CostOpInterface>(op.getOperation()).getFlops(), 8 * 105);
}

TEST_F(InterfacesTest, ReshapeHeadSplitFactorsTheMergedDimension) {
  auto op = parseOp<ReshapeOp>(R"mlir(
    func.func @f(%x: tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32> {
      %y = rtx.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
      return %y : tensor<2x16x4x16xf32>
    })mlir");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getShardingRule().str(),
            "([i, j, k*l]) -> ([i, j, k, l]) {i=2, j=16, k=4, l=16}");
}

TEST_F(InterfacesTest, ReshapeThatDoesNotFactorNeedsReplication) {
  auto op = parseOp<ReshapeOp>(R"mlir(
    func.func @f(%x: tensor<6x4xf32>) -> tensor<4x6xf32> {
      %y = rtx.reshape %x : tensor<6x4xf32> -> tensor<4x6xf32>
      return %y : tensor<4x6xf32>
    })mlir");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getShardingRule().str(),
            "([i, j]) -> ([k, l]) {i=6, j=4, k=4, l=6} "
            "need_replication={i, j, k, l}");
}

} // namespace
