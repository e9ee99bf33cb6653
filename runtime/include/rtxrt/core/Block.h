//===- Block.h - a rank's block of a sharded tensor -------------*- C++ -*-===//
//
// Where a rank's local block of a sharded value sits in the global tensor,
// and the slicing and reassembly that follow. Shared by rtx-run and by the
// programs rtx-translate emits; a sharding here is plain data (per dimension
// the mesh axes that split it, and the partial-sum axes).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_BLOCK_H
#define RTXRT_BLOCK_H

#include "rtxrt/core/MeshLayout.h"
#include "rtxrt/core/Tensor.h"

#include <string>
#include <vector>

namespace rtxrt {

struct Sharding {
  /// Per dimension, the mesh axes that split it (major to minor).
  std::vector<std::vector<std::string>> dims;
  /// Axes over which the value holds partial sums.
  std::vector<std::string> partial;
};

struct LocalBlock {
  Shape globalShape;
  std::vector<int64_t> offsets;
};

/// The block of `rank` for a value of local shape `localShape`. A sharding
/// with no dimensions, or a mesh with no axes, means the whole value.
LocalBlock localBlock(const Sharding &sharding, const Shape &localShape,
                      const MeshLayout &mesh, int64_t rank);

/// True when `rank`'s copy is the one reassembly uses: its coordinates on
/// every axis the sharding does not use are 0.
bool isCanonicalReplica(const Sharding &sharding, const MeshLayout &mesh,
                        int64_t rank);

/// The block of `global` at `offsets` with shape `localShape`.
Tensor sliceBlock(const Tensor &global, const Shape &localShape,
                  const std::vector<int64_t> &offsets);

/// Adds `local` into `global` at `offsets` (partial sums add up).
void accumulateBlock(Tensor &global, const Tensor &local,
                     const std::vector<int64_t> &offsets);

} // namespace rtxrt

#endif // RTXRT_BLOCK_H
