//===- ParseTest.cpp - parsing rtx IR from strings ------------------------===//

#include "TestContext.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {

TEST_F(RTXTest, ParsesMeshAndShardedFunction) {
  auto module = parse(R"mlir(
    rtx.mesh @mesh_dp2_tp4 ["dp"=2, "tp"=4]
    func.func @f(%x: tensor<8x16xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>})
        -> tensor<8x16xf32> {
      %y = rtx.relu %x : tensor<8x16xf32>
      return %y : tensor<8x16xf32>
    }
  )mlir");
  ASSERT_TRUE(module) << diagnostics;
  auto mesh = first<MeshOp>(*module);
  ASSERT_TRUE(mesh);
  EXPECT_EQ(mesh.getNumRanks(), 8);
  EXPECT_EQ(mesh.getAxisSize("tp"), std::optional<int64_t>(4));
  EXPECT_EQ(mesh.getAxisSize("sp"), std::nullopt);

  auto func = first<func::FuncOp>(*module);
  auto sharding = func.getArgAttrOfType<ShardingAttr>(0, "rtx.sharding");
  ASSERT_TRUE(sharding);
  EXPECT_EQ(sharding.getRank(), 2);
  ASSERT_EQ(sharding.getDimAxes(0).size(), 1u);
  EXPECT_EQ(sharding.getDimAxes(0)[0], "dp");
  EXPECT_TRUE(sharding.getDimAxes(1).empty());
  EXPECT_FALSE(sharding.isFullyReplicated());
}

TEST_F(RTXTest, ParsesPartialAxesAndInitializer) {
  auto module = parse(R"mlir(
    rtx.mesh @mesh_tp2 ["tp"=2]
    func.func @f() -> tensor<4x6xf32> {
      %w = rtx.param "w" uniform(-0.5, 0.5) seed 11
          {rtx.sharding = #rtx.sharding<@mesh_tp2, [[], []], partial = ["tp"]>}
          : tensor<4x6xf32>
      return %w : tensor<4x6xf32>
    }
  )mlir");
  ASSERT_TRUE(module) << diagnostics;
  auto param = first<ParamOp>(*module);
  EXPECT_EQ(param.getName(), "w");
  EXPECT_EQ(param.getEffectiveSeed(), 11);
  EXPECT_EQ(param.getInit().getKind(), InitKind::Uniform);
  EXPECT_DOUBLE_EQ(param.getInit().getA().convertToDouble(), -0.5);
  EXPECT_DOUBLE_EQ(param.getInit().getB().convertToDouble(), 0.5);
  auto sharding = param->getAttrOfType<ShardingAttr>("rtx.sharding");
  ASSERT_TRUE(sharding);
  ASSERT_EQ(sharding.getPartialAxes().size(), 1u);
  EXPECT_EQ(sharding.getPartialAxes()[0], "tp");
}

TEST_F(RTXTest, RejectsBadInputWithLocatedDiagnostic) {
  auto module = parse(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<7x16xf32>) -> tensor<4x16xf32> {
      %c = rtx.matmul %a, %b : tensor<4x8xf32>, tensor<7x16xf32> -> tensor<4x16xf32>
      return %c : tensor<4x16xf32>
    }
  )mlir");
  EXPECT_FALSE(module);
  EXPECT_NE(diagnostics.find("contracting dimensions differ: lhs has K = 8, "
                             "rhs has K = 7"),
            std::string::npos)
      << diagnostics;
}

TEST_F(RTXTest, RejectsShardingOnUnknownAxis) {
  auto module = parse(R"mlir(
    rtx.mesh @mesh_dp2 ["dp"=2]
    func.func @f(%x: tensor<8xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2, [["tp"]]>}) {
      return
    }
  )mlir");
  EXPECT_FALSE(module);
  EXPECT_NE(diagnostics.find("uses axis \"tp\" which mesh @mesh_dp2 does not "
                             "have"),
            std::string::npos)
      << diagnostics;
}

} // namespace
