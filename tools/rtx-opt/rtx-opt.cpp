//===- rtx-opt.cpp - the rtx optimizer driver -----------------------------===//
//
// Like mlir-opt: parses, verifies, runs passes, prints. Registers the rtx
// dialect and the dialects rtx programs are written in (func; arith, which
// the tests use to check that shardings are verified on any op), MLIR's
// generic passes, rtx's passes and pipelines (rtx-distribute), and rtx's
// test passes.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Dialect/RTX/Transforms/Passes.h"
#include "rtx/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace rtx::test {
void registerTestPasses();
} // namespace rtx::test

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::rtx::registerRTXPasses();
  mlir::rtx::registerRTXPipelines();
  rtx::test::registerTestPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::rtx::RTXDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "rtx optimizer driver: the rtx dialect and its passes\n",
      registry));
}
