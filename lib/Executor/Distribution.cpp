//===- Distribution.cpp - global <-> per-rank tensors ---------------------===//

#include "Distribution.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Shape;
using rtxrt::Tensor;

static std::vector<std::string> toStrings(ArrayRef<StringRef> axes) {
  std::vector<std::string> result;
  for (StringRef axis : axes)
    result.push_back(axis.str());
  return result;
}

LocalBlock mlir::rtx::getLocalBlock(ShardingAttr sharding,
                                    const Shape &localShape,
                                    const rtxrt::MeshLayout &mesh,
                                    int64_t rank) {
  LocalBlock block{localShape, std::vector<int64_t>(localShape.size(), 0)};
  // On a single rank (no mesh) a global program's shardings are only
  // annotations: every value is whole.
  if (!sharding || mesh.axisNames().empty())
    return block;
  if (sharding.getRank() != static_cast<int64_t>(localShape.size()))
    throw Error("sharding rank " + std::to_string(sharding.getRank()) +
                " does not match the value's shape " +
                rtxrt::shapeToString(localShape));
  for (size_t d = 0; d < localShape.size(); ++d) {
    std::vector<std::string> axes = toStrings(sharding.getDimAxes(d));
    if (axes.empty())
      continue;
    int64_t pieces = mesh.groupSize(axes);
    block.globalShape[d] = localShape[d] * pieces;
    block.offsets[d] = mesh.indexInGroup(rank, axes) * localShape[d];
  }
  return block;
}

bool mlir::rtx::isCanonicalReplica(ShardingAttr sharding,
                                   const rtxrt::MeshLayout &mesh,
                                   int64_t rank) {
  if (mesh.axisNames().empty())
    return true;
  std::vector<int64_t> coords = mesh.coordinates(rank);
  for (size_t a = 0; a < mesh.axisNames().size(); ++a) {
    const std::string &axis = mesh.axisNames()[a];
    bool used = false;
    if (sharding) {
      for (int64_t d = 0; d < sharding.getRank() && !used; ++d)
        used = llvm::is_contained(sharding.getDimAxes(d), axis);
      used = used || llvm::is_contained(sharding.getPartialAxes(), axis);
    }
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
  int64_t n = rtxrt::numElements(localShape);
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

Tensor mlir::rtx::sliceBlock(const Tensor &global, const Shape &localShape,
                             const std::vector<int64_t> &offsets) {
  if (global.shape() == localShape)
    return global;
  for (size_t d = 0; d < localShape.size(); ++d)
    if (offsets[d] + localShape[d] > global.dim(d))
      throw Error("block " + rtxrt::shapeToString(localShape) +
                  " does not fit in " + rtxrt::shapeToString(global.shape()));
  Tensor local(localShape, global.dtype());
  size_t width = rtxrt::dtypeSize(global.dtype());
  auto *dst = static_cast<unsigned char *>(local.raw());
  const auto *src = static_cast<const unsigned char *>(global.raw());
  forEachBlockElement(global.shape(), localShape, offsets,
                      [&](int64_t l, int64_t g) {
                        std::copy_n(src + g * width, width, dst + l * width);
                      });
  return local;
}

void mlir::rtx::accumulateBlock(Tensor &global, const Tensor &local,
                                const std::vector<int64_t> &offsets) {
  forEachBlockElement(global.shape(), local.shape(), offsets,
                      [&](int64_t l, int64_t g) {
                        global.setFromDouble(g, global.getAsDouble(g) +
                                                    local.getAsDouble(l));
                      });
}
