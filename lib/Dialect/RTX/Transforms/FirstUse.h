//===- FirstUse.h - where a value is first used in its block ----*- C++ -*-===//
//
// Shared by rtx-bucket-collectives and rtx-schedule-overlap, which both
// place a collective's result (or its wait) right before its first use.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_TRANSFORMS_FIRSTUSE_H
#define RTX_LIB_TRANSFORMS_FIRSTUSE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"

namespace mlir::rtx {

/// The first op of `block`, in order, that uses `value` (itself or through
/// a nested op); null when none does.
inline Operation *firstUseInBlock(Value value, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block.findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

} // namespace mlir::rtx

#endif // RTX_LIB_TRANSFORMS_FIRSTUSE_H
