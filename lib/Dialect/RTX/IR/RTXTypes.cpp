//===- RTXTypes.cpp - rtx types -------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rtx;

#define GET_TYPEDEF_CLASSES
#include "rtx/Dialect/RTX/IR/RTXTypes.cpp.inc"

void RTXDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "rtx/Dialect/RTX/IR/RTXTypes.cpp.inc"
      >();
}

LogicalResult TokenType::verify(function_ref<InFlightDiagnostic()> emitError,
                                Type valueType) {
  if (valueType && !isa<RankedTensorType>(valueType))
    return emitError() << "a token carries a ranked tensor type or nothing, "
                          "got "
                       << valueType;
  return success();
}
