//===- BuildTest.cpp - building rtx IR from C++ ---------------------------===//

#include "TestContext.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {

TEST_F(RTXTest, BuildsAndVerifiesAnMlp) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());

  MeshOp::create(b, loc, "mesh_dp2_tp2", b.getStrArrayAttr({"dp", "tp"}),
                 b.getDenseI64ArrayAttr({2, 2}));
  auto f32 = b.getF32Type();
  auto xType = RankedTensorType::get({8, 16}, f32);
  auto hType = RankedTensorType::get({8, 32}, f32);
  auto func = func::FuncOp::create(b, loc, "mlp",
                                   b.getFunctionType({xType}, {hType}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  auto init = InitAttr::get(&context, InitKind::Normal, 0.0, 0.02);
  auto w = ParamOp::create(b, loc, RankedTensorType::get({32, 16}, f32),
                           "fc.weight", init, b.getI64IntegerAttr(7));
  auto y = LinearOp::create(b, loc, hType, body->getArgument(0), w, Value());
  auto g = GeluOp::create(b, loc, y, /*approximate=*/true);
  g->setAttr("rtx.sharding",
             ShardingAttr::get(&context, "mesh_dp2_tp2", {{"dp"}, {"tp"}}));
  auto r = AllReduceOp::create(b, loc, hType, g, "mesh_dp2_tp2",
                               b.getStrArrayAttr({"tp"}), ReductionKind::Sum);
  func::ReturnOp::create(b, loc, r.getResult());

  EXPECT_TRUE(succeeded(verify(module))) << diagnostics;
  EXPECT_EQ(w.getEffectiveSeed(), 7);
  EXPECT_EQ(cast<ShardingAttr>(g->getAttr("rtx.sharding")).getDimAxes(1)[0],
            "tp");
  module->destroy();
}

TEST_F(RTXTest, VerifierRejectsWrongCollectiveShape) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  MeshOp::create(b, loc, "mesh_tp4", b.getStrArrayAttr({"tp"}),
                 b.getDenseI64ArrayAttr({4}));
  auto f32 = b.getF32Type();
  auto in = RankedTensorType::get({4, 2}, f32);
  auto func =
      func::FuncOp::create(b, loc, "f", b.getFunctionType({in}, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  // Gathering 4 ranks along dim 1 gives [4, 8], not [4, 6].
  AllGatherOp::create(b, loc, RankedTensorType::get({4, 6}, f32),
                      body->getArgument(0),
                      FlatSymbolRefAttr::get(&context, "mesh_tp4"),
                      b.getStrArrayAttr({"tp"}), b.getI64IntegerAttr(1));
  func::ReturnOp::create(b, loc);
  EXPECT_TRUE(failed(verify(module)));
  EXPECT_NE(diagnostics.find("result shape [4, 6] does not match [4, 8]"),
            std::string::npos)
      << diagnostics;
  module->destroy();
}

} // namespace
