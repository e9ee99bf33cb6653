//===- RTXDialect.h - the rtx dialect ---------------------------*- C++ -*-===//
//
// Include this header to use the rtx dialect: it brings the dialect, its
// enums, attributes, types, interfaces and ops.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXDIALECT_H
#define RTX_DIALECT_RTX_IR_RTXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "rtx/Dialect/RTX/IR/RTXDialect.h.inc"
#include "rtx/Dialect/RTX/IR/RTXEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "rtx/Dialect/RTX/IR/RTXAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "rtx/Dialect/RTX/IR/RTXTypes.h.inc"

#include "rtx/Dialect/RTX/IR/RTXInterfaces.h"

namespace mlir {
namespace rtx {
/// "[4, 8, 16]", for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

/// The exclusive upper bound for drawn integer data in `value`: the
/// vocabulary of the embedding or loss (or of their gradients) that reads
/// it, a split vocabulary counted whole, else 2. rtx-run and emitted
/// programs draw the same data from it.
int64_t getIntegerDataBound(Value value);

/// Verifies that `meshRef` names a mesh with each of `axes` (at least one,
/// distinct) and returns the size of their group.
FailureOr<int64_t> verifyMeshAxes(Operation *op, FlatSymbolRefAttr meshRef,
                                  ArrayAttr axes,
                                  SymbolTableCollection &symbols);

/// Verifies a collective (sync or async start form) against its mesh: the
/// mesh exists, the axes exist and are distinct, and the result shape is the
/// one the collective produces from its input over those axes.
LogicalResult verifyCollective(Operation *op, SymbolTableCollection &symbols);
} // namespace rtx
} // namespace mlir

#define GET_OP_CLASSES
#include "rtx/Dialect/RTX/IR/RTXOps.h.inc"

#endif // RTX_DIALECT_RTX_IR_RTXDIALECT_H
