//===- Distribution.h - shardings of rtx values as runtime blocks -*- C++ -*-===//
//
// Converts #rtx.sharding attributes to the runtime's plain Sharding, whose
// block arithmetic (rtxrt/core/Block.h) rtx-run and emitted programs share.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_DISTRIBUTION_H
#define RTX_LIB_EXECUTOR_DISTRIBUTION_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtxrt/core/Block.h"

namespace mlir::rtx {

/// The runtime form of `attr` (null: whole, replicated).
rtxrt::Sharding toRuntimeSharding(ShardingAttr attr);

/// The block of `rank` for a value of local shape `localShape` distributed
/// by `sharding` (null: replicated, the local shape is the global one).
inline rtxrt::LocalBlock getLocalBlock(ShardingAttr sharding,
                                       const rtxrt::Shape &localShape,
                                       const rtxrt::MeshLayout &mesh,
                                       int64_t rank) {
  return rtxrt::localBlock(toRuntimeSharding(sharding), localShape, mesh, rank);
}

inline bool isCanonicalReplica(ShardingAttr sharding,
                               const rtxrt::MeshLayout &mesh, int64_t rank) {
  return rtxrt::isCanonicalReplica(toRuntimeSharding(sharding), mesh, rank);
}

using rtxrt::accumulateBlock;
using rtxrt::LocalBlock;
using rtxrt::sliceBlock;

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_DISTRIBUTION_H
