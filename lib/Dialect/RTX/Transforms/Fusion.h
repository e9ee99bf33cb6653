//===- Fusion.h - where a fused op may replace the ops it fuses -*- C++ -*-===//
//
// Shared by the fusion passes (FuseResidualNorm.cpp, FuseCrossEntropy.cpp,
// FuseAdamW.cpp): a fused op replaces several ops at one place, which is
// valid when its operands are defined before that place and the replaced
// results are used only after it.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_DIALECT_RTX_TRANSFORMS_FUSION_H
#define RTX_LIB_DIALECT_RTX_TRANSFORMS_FUSION_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/Dominance.h"

namespace mlir::rtx {

/// Every operand of `values` is available right before `point`.
inline bool allDefinedBefore(ValueRange values, Operation *point,
                             DominanceInfo &dom) {
  return llvm::all_of(values,
                      [&](Value v) { return dom.properlyDominates(v, point); });
}

/// Every use of `results` is after `point` (uses by `point` itself or by
/// the ops in `replaced`, which go away, do not count).
inline bool allUsedAfter(ValueRange results, Operation *point,
                         ArrayRef<Operation *> replaced, DominanceInfo &dom) {
  for (Value result : results)
    for (Operation *user : result.getUsers())
      if (!llvm::is_contained(replaced, user) &&
          !dom.properlyDominates(point, user))
        return false;
  return true;
}

/// The discardable attributes of `from` (pipeline stage, backward marks)
/// on `to`, except the sharding, which the caller composes per result.
inline void copyDiscardableAttrs(Operation *from, Operation *to) {
  for (NamedAttribute attr : from->getDiscardableAttrs())
    if (attr.getName() != RTXDialect::getShardingAttrName())
      to->setAttr(attr.getName(), attr.getValue());
}

/// The per-result sharding of a fused op (an array, as ops with several
/// results carry) from the ops whose results it replaces, when all of them
/// have one.
inline void setResultShardings(Operation *fused, ArrayRef<Operation *> owners) {
  SmallVector<Attribute> shardings;
  for (Operation *owner : owners) {
    Attribute sharding = owner->getAttr(RTXDialect::getShardingAttrName());
    if (!sharding)
      return;
    shardings.push_back(sharding);
  }
  fused->setAttr(RTXDialect::getShardingAttrName(),
                 ArrayAttr::get(fused->getContext(), shardings));
}

} // namespace mlir::rtx

#endif // RTX_LIB_DIALECT_RTX_TRANSFORMS_FUSION_H
