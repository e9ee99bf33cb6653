//===- FlatBuffer.cpp - one rank's shard of several tensors ---------------===//

#include "rtxrt/core/FlatBuffer.h"

#include <cstring>

using namespace rtxrt;

int64_t FlatLayout::padded(const MeshLayout &mesh) const {
  int64_t n = mesh.axisSize(axis);
  return (length + n - 1) / n * n;
}

int64_t FlatLayout::shard(const MeshLayout &mesh) const {
  return padded(mesh) / mesh.axisSize(axis);
}

Tensor rtxrt::packFlatShard(const FlatLayout &layout,
                            const std::vector<Tensor> &blocks,
                            const MeshLayout &mesh, int64_t rank, DType dtype) {
  if (blocks.size() != layout.offsets.size())
    throw Error("flat buffer: " + std::to_string(blocks.size()) +
                " member blocks for " + std::to_string(layout.offsets.size()) +
                " members");
  int64_t size = layout.shard(mesh);
  int64_t begin = mesh.coordinates(rank)[mesh.axisIndex(layout.axis)] * size;
  Tensor shard({size}, dtype); // zeros: the padding
  size_t element = dtypeSize(dtype);
  for (size_t m = 0; m < blocks.size(); ++m) {
    Tensor block = blocks[m].to(dtype);
    int64_t from = std::max(begin, layout.offsets[m]);
    int64_t to = std::min(begin + size, layout.offsets[m] + block.numel());
    if (from >= to)
      continue;
    std::memcpy(static_cast<char *>(shard.raw()) + (from - begin) * element,
                static_cast<const char *>(block.raw()) +
                    (from - layout.offsets[m]) * element,
                (to - from) * element);
  }
  return shard;
}

Tensor rtxrt::unpackFlatMember(const FlatLayout &layout,
                               const std::vector<Tensor> &shards,
                               const MeshLayout &mesh, int64_t rank,
                               size_t member) {
  int64_t axis = mesh.axisIndex(layout.axis);
  int64_t size = layout.shard(mesh);
  const Shape &shape = layout.shapes.at(member);
  int64_t numel = numElements(shape);
  DType dtype = shards.at(rank).dtype();
  Tensor block(shape, dtype);
  size_t element = dtypeSize(dtype);
  std::vector<int64_t> coords = mesh.coordinates(rank);
  for (int64_t c = 0; c < mesh.axisSizes()[axis]; ++c) {
    coords[axis] = c;
    const Tensor &shard = shards.at(mesh.rankOf(coords));
    int64_t begin = c * size;
    int64_t from = std::max(begin, layout.offsets[member]);
    int64_t to = std::min(begin + size, layout.offsets[member] + numel);
    if (from >= to)
      continue;
    std::memcpy(static_cast<char *>(block.raw()) +
                    (from - layout.offsets[member]) * element,
                static_cast<const char *>(shard.raw()) +
                    (from - begin) * element,
                (to - from) * element);
  }
  return block;
}

Tensor rtxrt::assembleFlatMember(
    const FlatLayout &layout, const std::vector<Tensor> &shards,
    const MeshLayout &mesh, size_t member, const Sharding &sharding,
    const Shape &localShape, DType dtype,
    const std::function<int64_t(int64_t)> &placeOf) {
  Tensor global(localBlock(sharding, localShape, mesh, 0).globalShape, dtype);
  for (int64_t r = 0; r < mesh.numRanks(); ++r)
    if (int64_t place = placeOf(r);
        place >= 0 && isCanonicalReplica(sharding, mesh, place))
      accumulateBlock(global, unpackFlatMember(layout, shards, mesh, r, member),
                      localBlock(sharding, localShape, mesh, place).offsets);
  return global;
}
