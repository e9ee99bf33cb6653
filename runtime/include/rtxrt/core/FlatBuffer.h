//===- FlatBuffer.h - one rank's shard of several tensors -------*- C++ -*-===//
//
// rtx-shard-state (ZeRO / FSDP) keeps the parameters, gradients and
// optimizer state of a unit as one flat buffer per rank: the members' local
// blocks (tensor parallelism keeps its own layout) flattened, concatenated,
// padded with zeros to a multiple of the shard axis's size N, and cut into N
// shards; rank i of the axis holds shard i. Shared by rtx-run and by
// emitted programs, which load a buffer's shard from its members and put
// the members back together for results and state files (docs/fsdp.md).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_FLATBUFFER_H
#define RTXRT_FLATBUFFER_H

#include "rtxrt/core/Block.h"
#include "rtxrt/core/MeshLayout.h"
#include "rtxrt/core/Tensor.h"

#include <functional>
#include <string>
#include <vector>

namespace rtxrt {

struct FlatLayout {
  std::string axis;             // the mesh axis the buffer is sharded over
  int64_t length = 0;           // elements of all members together
  std::vector<int64_t> offsets; // where each member starts
  std::vector<Shape> shapes;    // each member's local (per-rank) shape
  bool empty() const { return offsets.empty(); }
  /// The buffer's length padded to a multiple of the axis's size.
  int64_t padded(const MeshLayout &mesh) const;
  int64_t shard(const MeshLayout &mesh) const;
};

/// `rank`'s shard of the buffer whose members' local blocks (on `rank`) are
/// `blocks`.
Tensor packFlatShard(const FlatLayout &layout,
                     const std::vector<Tensor> &blocks, const MeshLayout &mesh,
                     int64_t rank, DType dtype);

/// Member `member`'s local block on `rank`, from every rank's shard
/// (`shards[r]` is rank r's).
Tensor unpackFlatMember(const FlatLayout &layout,
                        const std::vector<Tensor> &shards,
                        const MeshLayout &mesh, int64_t rank, size_t member);

/// Member `member`'s global value (of `sharding`, local shape `localShape`)
/// from every rank's shard: each canonical replica's block. `placeOf(r)` is
/// the rank whose place in the mesh rank r's block describes, or -1 when r
/// holds none of this buffer (in a pipelined program, a rank of another
/// stage: its rank at that stage's coordinate is passed, mapped to
/// coordinate 0).
Tensor assembleFlatMember(const FlatLayout &layout,
                          const std::vector<Tensor> &shards,
                          const MeshLayout &mesh, size_t member,
                          const Sharding &sharding, const Shape &localShape,
                          DType dtype,
                          const std::function<int64_t(int64_t)> &placeOf);

} // namespace rtxrt

#endif // RTXRT_FLATBUFFER_H
