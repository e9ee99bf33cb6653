//===- Block.cpp - a rank's block of a sharded tensor ---------------------===//

#include "rtxrt/core/Block.h"

#include <algorithm>

using namespace rtxrt;

LocalBlock rtxrt::localBlock(const Sharding &sharding, const Shape &localShape,
                             const MeshLayout &mesh, int64_t rank) {
  LocalBlock block{localShape, std::vector<int64_t>(localShape.size(), 0)};
  if (sharding.dims.empty() || mesh.axisNames().empty())
    return block;
  if (sharding.dims.size() != localShape.size())
    throw Error("a sharding of rank " + std::to_string(sharding.dims.size()) +
                " does not match the value's shape " +
                shapeToString(localShape));
  for (size_t d = 0; d < localShape.size(); ++d) {
    const std::vector<std::string> &axes = sharding.dims[d];
    if (axes.empty())
      continue;
    block.globalShape[d] = localShape[d] * mesh.groupSize(axes);
    block.offsets[d] = mesh.indexInGroup(rank, axes) * localShape[d];
  }
  return block;
}

bool rtxrt::isCanonicalReplica(const Sharding &sharding,
                               const MeshLayout &mesh, int64_t rank) {
  if (mesh.axisNames().empty())
    return true;
  std::vector<int64_t> coords = mesh.coordinates(rank);
  for (size_t a = 0; a < mesh.axisNames().size(); ++a) {
    const std::string &axis = mesh.axisNames()[a];
    bool used =
        std::count(sharding.partial.begin(), sharding.partial.end(), axis) > 0;
    for (const auto &axes : sharding.dims)
      used = used || std::count(axes.begin(), axes.end(), axis) > 0;
    if (!used && coords[a] != 0)
      return false;
  }
  return true;
}

/// Calls `fn(localIndex, globalIndex)` for every element of the block.
template <typename Fn>
static void forEachBlockElement(const Shape &globalShape,
                                const Shape &localShape,
                                const std::vector<int64_t> &offsets, Fn fn) {
  int64_t n = numElements(localShape);
  size_t rank = localShape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t local = 0; local < n; ++local) {
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d)
      global = global * globalShape[d] + offsets[d] + index[d];
    fn(local, global);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < localShape[d])
        break;
      index[d] = 0;
    }
  }
}

Tensor rtxrt::sliceBlock(const Tensor &global, const Shape &localShape,
                         const std::vector<int64_t> &offsets) {
  if (global.shape() == localShape)
    return global;
  for (size_t d = 0; d < localShape.size(); ++d)
    if (offsets[d] + localShape[d] > global.dim(d))
      throw Error("block " + shapeToString(localShape) + " does not fit in " +
                  shapeToString(global.shape()));
  Tensor local(localShape, global.dtype());
  size_t width = dtypeSize(global.dtype());
  auto *dst = static_cast<unsigned char *>(local.raw());
  const auto *src = static_cast<const unsigned char *>(global.raw());
  forEachBlockElement(global.shape(), localShape, offsets,
                      [&](int64_t l, int64_t g) {
                        std::copy_n(src + g * width, width, dst + l * width);
                      });
  return local;
}

void rtxrt::accumulateBlock(Tensor &global, const Tensor &local,
                            const std::vector<int64_t> &offsets) {
  forEachBlockElement(global.shape(), local.shape(), offsets,
                      [&](int64_t l, int64_t g) {
                        global.setFromDouble(g, global.getAsDouble(g) +
                                                    local.getAsDouble(l));
                      });
}
