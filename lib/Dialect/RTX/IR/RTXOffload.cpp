//===- RTXOffload.cpp - verifiers of the offload ops ----------------------===//
//
// An offloaded buffer is a reference: the verifiers keep it one. It is a
// function argument marked `rtx.offload` that only rtx.offload_fetch_start
// reads and rtx.offload_store replaces, and the store's result only goes
// back to the step's caller at a result marked `rtx.offload`.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::rtx;

/// `buffer` is an argument of a function marked `rtx.offload` with an
/// `rtx.state` key.
static LogicalResult verifyOffloadedArgument(Operation *op, Value buffer) {
  auto arg = dyn_cast<BlockArgument>(buffer);
  auto function =
      arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp())
          : FunctionOpInterface();
  if (!function || arg.getOwner() != &function.getFunctionBody().front())
    return op->emitOpError()
           << "reads an offloaded buffer, which must be an argument of the "
              "function marked 'rtx.offload'";
  unsigned index = arg.getArgNumber();
  if (!function.getArgAttr(index, RTXDialect::getOffloadAttrName()))
    return op->emitOpError()
           << "argument " << index << " is not marked 'rtx.offload'";
  if (!function.getArgAttr(index, RTXDialect::getStateAttrName()))
    return op->emitOpError()
           << "offloaded argument " << index << " has no 'rtx.state' key";
  return success();
}

/// The `rtx.state` key of an offloaded argument (verified to be there).
static StringRef bufferKeyOf(Value buffer) {
  auto arg = cast<BlockArgument>(buffer);
  auto function = cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return cast<StringAttr>(function.getArgAttr(arg.getArgNumber(),
                                              RTXDialect::getStateAttrName()))
      .getValue();
}

StringRef OffloadFetchStartOp::getBufferKey() {
  return bufferKeyOf(getBuffer());
}
StringRef OffloadStoreOp::getBufferKey() { return bufferKeyOf(getBuffer()); }

LogicalResult OffloadFetchStartOp::verify() {
  if (failed(verifyOffloadedArgument(*this, getBuffer())))
    return failure();
  Type valueType = cast<TokenType>(getToken().getType()).getValueType();
  if (valueType != getBuffer().getType())
    return emitOpError() << "token carries " << valueType
                         << " but the buffer is " << getBuffer().getType();
  return success();
}

LogicalResult OffloadStoreOp::verify() {
  if (failed(verifyOffloadedArgument(*this, getBuffer())))
    return failure();
  auto function = cast<FunctionOpInterface>(
      cast<BlockArgument>(getBuffer()).getOwner()->getParentOp());
  for (OpOperand &use : getResult().getUses()) {
    Operation *user = use.getOwner();
    if (!user->hasTrait<OpTrait::IsTerminator>() ||
        user->getParentOp() != function)
      return emitOpError() << "result may only be returned by the step, but "
                           << user->getName() << " uses it";
    if (!function.getResultAttr(use.getOperandNumber(),
                                RTXDialect::getOffloadAttrName()))
      return emitOpError() << "is returned as result " << use.getOperandNumber()
                           << ", which is not marked 'rtx.offload'";
  }
  return success();
}
