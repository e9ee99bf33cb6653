//===- ParseFuzzer.cpp - libFuzzer target over parse + verify -------------===//
//
// Feeds arbitrary bytes to the MLIR parser with the rtx dialect (and the
// dialects rtx-opt registers) loaded, then verifies what parsed. Any crash,
// assertion, sanitizer report or hang is a bug: bad input must only ever
// produce diagnostics.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

static MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    registry.insert<rtx::RTXDialect, func::FuncDialect, arith::ArithDialect,
                    tensor::TensorDialect>();
    auto *ctx = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    return ctx;
  }();
  return *context;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = getContext();
  // Diagnostics are the expected outcome for bad input; keep them quiet.
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  // MLIR's lexer reads the byte after the buffer, expecting a terminating
  // NUL; libFuzzer's buffers have none, so copy into a std::string.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (module)
    (void)verify(*module);
  return 0;
}
