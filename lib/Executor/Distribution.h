//===- Distribution.h - global <-> per-rank tensors -------------*- C++ -*-===//
//
// Where a rank's local block of a sharded value sits in the global tensor,
// and the slicing and reassembly that follow from it.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_DISTRIBUTION_H
#define RTX_LIB_EXECUTOR_DISTRIBUTION_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtxrt/MeshLayout.h"
#include "rtxrt/Tensor.h"

#include <vector>

namespace mlir::rtx {

/// A rank's block of a global tensor.
struct LocalBlock {
  rtxrt::Shape globalShape;
  std::vector<int64_t> offsets;
};

/// The block of `rank` for a value of local shape `localShape` distributed
/// by `sharding` (null: replicated, the local shape is the global one).
LocalBlock getLocalBlock(ShardingAttr sharding, const rtxrt::Shape &localShape,
                         const rtxrt::MeshLayout &mesh, int64_t rank);

/// True when `rank` holds the copy of the value that reassembly uses: its
/// coordinates on every mesh axis that neither splits nor partially sums the
/// value are 0.
bool isCanonicalReplica(ShardingAttr sharding, const rtxrt::MeshLayout &mesh,
                        int64_t rank);

/// The block of `global` at `block` with shape `localShape`.
rtxrt::Tensor sliceBlock(const rtxrt::Tensor &global,
                         const rtxrt::Shape &localShape,
                         const std::vector<int64_t> &offsets);

/// Adds `local` into `global` at `offsets` (partial sums add up).
void accumulateBlock(rtxrt::Tensor &global, const rtxrt::Tensor &local,
                     const std::vector<int64_t> &offsets);

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_DISTRIBUTION_H
