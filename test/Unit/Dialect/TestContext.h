//===- TestContext.h - shared fixture for dialect unit tests ----*- C++ -*-===//

#ifndef RTX_TEST_UNIT_DIALECT_TESTCONTEXT_H
#define RTX_TEST_UNIT_DIALECT_TESTCONTEXT_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

/// A context with the rtx and func dialects that records diagnostics instead
/// of printing them.
class RTXTest : public ::testing::Test {
protected:
  RTXTest() {
    context.getOrLoadDialect<mlir::rtx::RTXDialect>();
    context.getOrLoadDialect<mlir::func::FuncDialect>();
    context.getDiagEngine().registerHandler([this](mlir::Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return mlir::success();
    });
  }

  mlir::OwningOpRef<mlir::ModuleOp> parse(llvm::StringRef text) {
    return mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  }

  /// The first op of type OpTy in `module`.
  template <typename OpTy> OpTy first(mlir::ModuleOp module) {
    OpTy found;
    module.walk([&](OpTy op) {
      if (!found)
        found = op;
    });
    return found;
  }

  mlir::MLIRContext context;
  std::string diagnostics;
};

#endif // RTX_TEST_UNIT_DIALECT_TESTCONTEXT_H
