//===- FactorAssignmentTest.cpp - which mesh axes split each factor -------===//
//
// rtx-partition's first step alone, on hand-written rules and layouts: a
// matmul's factors take the axes of the operands around it in priority
// order; need-replication and non-dividing axes are refused; an axis goes
// to one factor only; a minor factor of a merged dimension stays whole.
//
//===----------------------------------------------------------------------===//

#include "FactorAssignment.h"

#include "gtest/gtest.h"

#include <map>

using namespace mlir;
using namespace mlir::rtx;

namespace {

const std::map<std::string, int64_t> kMesh = {{"dp", 2}, {"tp", 4}};

int64_t product(ArrayRef<std::string> axes) {
  int64_t n = 1;
  for (const std::string &a : axes)
    n *= kMesh.at(a);
  return n;
}

Layout layout(std::vector<std::vector<std::string>> dims) {
  Layout l = Layout::replicated(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    l.dims[d].assign(dims[d].begin(), dims[d].end());
  return l;
}

using Axes = SmallVector<std::string, 2>;

/// [i, k] x [k, j] -> [i, j] with i = 8, j = 16, k = 12.
struct MatmulRule {
  OpShardingRule rule;
  int64_t i, j, k;
  MatmulRule() {
    i = rule.addFactor(8);
    j = rule.addFactor(16);
    k = rule.addFactor(12, FactorKind::Reduction);
    rule.operandFactors = {{{i}, {k}}, {{k}, {j}}};
    rule.resultFactors = {{{i}, {j}}};
  }
};

TEST(FactorAssignmentTest, FirstCandidateClaimsTheAxesOfItsDimensions) {
  MatmulRule m;
  llvm::StringSet<> used;
  auto axes = assignFactorAxes(
      m.rule,
      {{m.rule.operandFactors[1], layout({{}, {"tp"}})}, // column-parallel
       {m.rule.resultFactors[0], layout({{"dp"}, {}})},
       {m.rule.operandFactors[0], layout({{"dp"}, {"tp"}})}},
      {}, product, used);
  EXPECT_EQ(axes[m.i], Axes({"dp"}));
  EXPECT_EQ(axes[m.j], Axes({"tp"}));
  // The lhs asks to split k over tp too, but tp is taken by j.
  EXPECT_TRUE(axes[m.k].empty());
  EXPECT_TRUE(used.contains("dp") && used.contains("tp"));
}

TEST(FactorAssignmentTest, ReservedAndNonDividingAxesAreRefused) {
  MatmulRule m;
  llvm::StringSet<> reserved, used;
  reserved.insert("tp");
  auto axes = assignFactorAxes(
      m.rule, {{m.rule.operandFactors[0], layout({{"dp"}, {"tp"}})}}, reserved,
      product, used);
  EXPECT_EQ(axes[m.i], Axes({"dp"}));
  EXPECT_TRUE(axes[m.k].empty());
  // 12 is not a multiple of dp x tp = 8.
  used.clear();
  axes = assignFactorAxes(
      m.rule, {{m.rule.operandFactors[0], layout({{}, {"dp", "tp"}})}}, {},
      product, used);
  EXPECT_TRUE(axes[m.k].empty());
  EXPECT_TRUE(used.empty());
}

TEST(FactorAssignmentTest, NeedReplicationFactorsStayWhole) {
  OpShardingRule rule; // a softmax over its last dimension
  int64_t rows = rule.addFactor(8);
  int64_t cols = rule.addFactor(16, FactorKind::NeedReplication);
  rule.operandFactors = {{{rows}, {cols}}};
  rule.resultFactors = {{{rows}, {cols}}};
  llvm::StringSet<> used;
  auto axes = assignFactorAxes(
      rule, {{rule.operandFactors[0], layout({{"dp"}, {"tp"}})}}, {}, product,
      used);
  EXPECT_EQ(axes[rows], Axes({"dp"}));
  EXPECT_TRUE(axes[cols].empty());
}

TEST(FactorAssignmentTest, MinorFactorOfAMergedDimensionStaysWhole) {
  OpShardingRule rule; // reshape [B, S] -> [B*S]
  int64_t b = rule.addFactor(4);
  int64_t s = rule.addFactor(8);
  rule.operandFactors = {{{b}, {s}}};
  rule.resultFactors = {{{b, s}}};
  llvm::StringSet<> used;
  auto axes = assignFactorAxes(
      rule, {{rule.operandFactors[0], layout({{"dp"}, {"tp"}})}}, {}, product,
      used);
  EXPECT_EQ(axes[b], Axes({"dp"}));
  // Splitting S inside B*S is not a block split of the merged dimension.
  EXPECT_TRUE(axes[s].empty());
}

} // namespace
