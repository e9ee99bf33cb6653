//===- Tiling.cpp - a manifest's chunks tile its tensors ------------------===//

#include "Tiling.h"

using namespace rtxrt;
using namespace rtxrt::checkpoint;

namespace {

std::string describe(const Chunk &chunk) {
  return "the chunk of " + chunk.tensor + " at " +
         shapeToString(chunk.offsets) + " of shape " +
         shapeToString(chunk.shape) + " in " + chunk.file;
}

bool overlaps(const Chunk &a, const Chunk &b) {
  for (size_t d = 0; d < a.offsets.size(); ++d)
    if (a.offsets[d] + a.shape[d] <= b.offsets[d] ||
        b.offsets[d] + b.shape[d] <= a.offsets[d])
      return false;
  return true;
}

/// Why `chunk` cannot be a block of `info` as stored, or empty.
std::string checkChunk(const Chunk &chunk, const TensorInfo *info) {
  if (!info)
    return "names no tensor of the manifest";
  size_t rank = info->shape.size();
  if (chunk.offsets.size() != rank || chunk.shape.size() != rank)
    return "does not have the rank of " + info->name +
           shapeToString(info->shape);
  for (size_t d = 0; d < rank; ++d)
    if (chunk.offsets[d] < 0 || chunk.shape[d] < 0 ||
        chunk.offsets[d] + chunk.shape[d] > info->shape[d])
      return "reaches outside " + info->name + shapeToString(info->shape) +
             " in dimension " + std::to_string(d);
  if (chunk.byteOffset < 0)
    return "starts at byte " + std::to_string(chunk.byteOffset);
  int64_t bytes = tensorBytes(chunk.shape, info->dtype, "chunk");
  if (chunk.byteSize != bytes)
    return "says " + std::to_string(chunk.byteSize) + " bytes where its " +
           dtypeName(info->dtype) + " shape makes " + std::to_string(bytes);
  return "";
}

} // namespace

void checkpoint::checkTiling(const Manifest &manifest,
                             const std::string &where) {
  for (const Chunk &chunk : manifest.chunks) {
    std::string why = checkChunk(chunk, manifest.find(chunk.tensor));
    if (!why.empty())
      throw Error(where + ": " + describe(chunk) + " " + why);
  }
  for (const TensorInfo &info : manifest.tensors) {
    std::vector<const Chunk *> mine;
    int64_t covered = 0;
    for (const Chunk &c : manifest.chunks) {
      if (c.tensor != info.name)
        continue;
      for (const Chunk *other : mine)
        if (overlaps(*other, c))
          throw Error(where + ": " + describe(c) + " overlaps the one at " +
                      shapeToString(other->offsets) +
                      " (two ranks wrote the same elements)");
      mine.push_back(&c);
      covered += numElements(c.shape);
    }
    // Inside the tensor and disjoint: covering as many elements as it has
    // is covering each of them once.
    int64_t total = numElements(info.shape);
    if (covered != total)
      throw Error(where + ": the chunks of " + info.name +
                  shapeToString(info.shape) + " cover " +
                  std::to_string(covered) + " of its " + std::to_string(total) +
                  " elements (a rank's chunks are missing)");
  }
}
