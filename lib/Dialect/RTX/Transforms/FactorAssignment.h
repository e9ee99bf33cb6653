//===- FactorAssignment.h - which mesh axes split each factor --*- C++ -*-===//
//
// The first step of rtx-partition's default rule, as a pure function of the
// op's sharding rule and the layouts around it, so it can be tested alone.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_DIALECT_RTX_TRANSFORMS_FACTORASSIGNMENT_H
#define RTX_LIB_DIALECT_RTX_TRANSFORMS_FACTORASSIGNMENT_H

#include "Layout.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rtx {

/// A value around the op: its factors (one list per dimension) and the
/// layout it is declared with.
struct FactorCandidate {
  const OpShardingRule::ValueFactors &dims;
  Layout layout;
};

/// The mesh axes of each factor of `rule`. Candidates claim axes in order:
/// a dimension's major factor takes the axes that split that dimension when
///   - no earlier candidate gave the factor axes,
///   - the factor may be split (it is not need-replication),
///   - the axes' product divides the factor's size, and
///   - no other factor and nothing in `reserved` has those axes.
/// A minor factor of a merged dimension ([B*S] split over the sequence) is
/// not a block split of that dimension: such factors stay whole. Finally a
/// factor whose axes an earlier factor already uses stays whole. `used`
/// receives every axis some factor took.
SmallVector<SmallVector<std::string, 2>>
assignFactorAxes(const OpShardingRule &rule,
                 ArrayRef<FactorCandidate> candidates,
                 const llvm::StringSet<> &reserved,
                 llvm::function_ref<int64_t(ArrayRef<std::string>)> product,
                 llvm::StringSet<> &used);

} // namespace mlir::rtx

#endif // RTX_LIB_DIALECT_RTX_TRANSFORMS_FACTORASSIGNMENT_H
