//===- CheckpointWriter.cpp - a rank's chunks, and the commit -------------===//
//
// Steps 1 and 2 of the commit protocol in rtxrt/checkpoint/Checkpoint.h.
//
//===----------------------------------------------------------------------===//

#include "DurableFiles.h"
#include "Failpoints.h"
#include "Manifest.h"
#include "Tiling.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <set>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::checkpoint;

struct ShardWriter::State {
  int64_t step = 0, rank = 0;
  int fd = -1;
  std::string dataPath;
  durable::WriteBudget budget;
  Manifest index;
  bool finished = false;
};

namespace {

std::string describeBlock(const std::string &tensor,
                          const std::vector<int64_t> &offsets,
                          const Shape &shape) {
  return tensor + " block at " + shapeToString(offsets) + " of shape " +
         shapeToString(shape);
}

/// Adds `info` to `into`, or checks that it agrees with what is there.
void recordTensor(Manifest &into, const TensorInfo &info,
                  const std::string &where) {
  if (const TensorInfo *known = into.find(info.name)) {
    if (known->shape != info.shape || known->dtype != info.dtype)
      throw Error(where + ": tensor " + info.name + " is " +
                  dtypeName(info.dtype) + shapeToString(info.shape) +
                  " here but " + dtypeName(known->dtype) +
                  shapeToString(known->shape) + " elsewhere");
    return;
  }
  into.tensors.push_back(info);
}

} // namespace

std::vector<Box> checkpoint::boxesOfRange(const Shape &shape, int64_t begin,
                                          int64_t end) {
  std::vector<Box> boxes;
  if (begin >= end)
    return boxes;
  if (shape.empty())
    return {Box{{}, {}}};
  Shape inner(shape.begin() + 1, shape.end());
  int64_t rowSize = numElements(inner);
  // Within one row: the leading index fixed, the rest recursively.
  auto partialRow = [&](int64_t row, int64_t from, int64_t to) {
    for (Box &box : boxesOfRange(inner, from, to)) {
      box.offsets.insert(box.offsets.begin(), row);
      box.shape.insert(box.shape.begin(), 1);
      boxes.push_back(std::move(box));
    }
  };
  int64_t first = begin / rowSize, last = (end - 1) / rowSize;
  if (first == last) {
    partialRow(first, begin - first * rowSize, end - first * rowSize);
    return boxes;
  }
  int64_t fullFrom = first, fullTo = last + 1; // whole rows [fullFrom, fullTo)
  if (begin % rowSize != 0) {
    partialRow(first, begin % rowSize, rowSize);
    fullFrom = first + 1;
  }
  if (end % rowSize != 0)
    fullTo = last;
  if (fullFrom < fullTo) {
    Box whole{std::vector<int64_t>(shape.size(), 0), shape};
    whole.offsets[0] = fullFrom;
    whole.shape[0] = fullTo - fullFrom;
    boxes.push_back(std::move(whole));
  }
  if (end % rowSize != 0)
    partialRow(last, 0, end % rowSize);
  return boxes;
}

ShardWriter::ShardWriter(const std::string &root, int64_t step, int64_t rank)
    : state_(std::make_unique<State>()) {
  std::string base = durable::normalized(root);
  dir_ = base + "/" + checkpointDirName(step);
  bool fresh = !durable::exists(base);
  durable::makeDirectory(base);
  if (fresh)
    durable::syncDirectory(durable::parentOf(base));
  // Every rank creates it; the directory's own name becomes durable with
  // the fsync of ROOT (the manifest's rename fsyncs only the directory).
  durable::makeDirectory(dir_);
  // A manifest left by an earlier save of this step (one that a check
  // skipped, before the run resumed from an older checkpoint) would
  // describe the files this save rewrites: it goes first.
  std::string stale = dir_ + "/" + manifestFileName();
  if (unlink(stale.c_str()) != 0 && errno != ENOENT)
    durable::fail("cannot remove", stale, errno);
  durable::syncDirectory(base);
  durable::syncDirectory(dir_);
  state_->step = step;
  state_->rank = rank;
  state_->index.step = step;
  state_->index.writers = 1;
  state_->dataPath = dir_ + "/" + dataFileName(rank);
  // A file a crashed save of the same step left is replaced.
  state_->fd = open(state_->dataPath.c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (state_->fd < 0)
    durable::fail("cannot write", state_->dataPath, errno);
}

ShardWriter::~ShardWriter() {
  if (state_->fd >= 0)
    close(state_->fd);
}

void ShardWriter::add(const TensorInfo &info,
                      const std::vector<int64_t> &offsets, const Tensor &block,
                      const std::string &placement) {
  if (state_->finished)
    throw Error("checkpoint " + dir_ + ": a chunk of " + info.name +
                " added after finish()");
  if (block.dtype() != info.dtype || offsets.size() != info.shape.size() ||
      block.shape().size() != info.shape.size())
    throw Error("checkpoint " + dir_ + ": the " +
                describeBlock(info.name, offsets, block.shape()) + " (" +
                dtypeName(block.dtype()) + ") does not match the tensor " +
                dtypeName(info.dtype) + shapeToString(info.shape));
  for (size_t d = 0; d < offsets.size(); ++d)
    if (offsets[d] < 0 || offsets[d] + block.dim(d) > info.shape[d])
      throw Error("checkpoint " + dir_ + ": the " +
                  describeBlock(info.name, offsets, block.shape()) +
                  " reaches outside " + shapeToString(info.shape) +
                  " in dimension " + std::to_string(d));
  recordTensor(state_->index, info, dir_);
  Chunk chunk;
  chunk.tensor = info.name;
  chunk.offsets = offsets;
  chunk.shape = block.shape();
  chunk.file = dataFileName(state_->rank);
  chunk.byteOffset = state_->index.chunks.empty()
                         ? 0
                         : state_->index.chunks.back().byteOffset +
                               state_->index.chunks.back().byteSize;
  chunk.byteSize = static_cast<int64_t>(block.nbytes());
  chunk.crc = crc32c(block.raw(), block.nbytes());
  chunk.placement = placement;
  durable::writeAll(state_->fd, block.raw(), block.nbytes(), state_->dataPath,
                    &state_->budget);
  state_->index.chunks.push_back(std::move(chunk));
  crashPoint("chunk:" + std::to_string(state_->index.chunks.size() - 1),
             state_->index.step);
}

void ShardWriter::finish() {
  durable::syncFile(state_->fd, state_->dataPath);
  if (close(state_->fd) != 0) {
    state_->fd = -1;
    durable::fail("cannot write", state_->dataPath, errno);
  }
  state_->fd = -1;
  durable::writeFileAtomically(
      dir_ + "/" + indexFileName(state_->rank),
      encodeManifest(state_->index, "index"), &state_->budget,
      {[this] { crashPoint("before-index-rename", state_->index.step); },
       nullptr});
  state_->finished = true;
}

Manifest checkpoint::commitCheckpoint(
    const std::string &root, int64_t step, int64_t writers,
    const std::map<std::string, std::string> &metadata) {
  std::string dir = durable::normalized(root) + "/" + checkpointDirName(step);
  Manifest manifest;
  manifest.step = step;
  manifest.writers = writers;
  manifest.metadata = metadata;
  for (int64_t rank = 0; rank < writers; ++rank) {
    std::string path = dir + "/" + indexFileName(rank);
    if (!durable::exists(path))
      throw Error("checkpoint " + dir + ": rank " + std::to_string(rank) +
                  " did not finish its chunks (no " + indexFileName(rank) +
                  ")");
    Manifest index = decodeManifest(durable::readFile(path), "index", path);
    if (index.step != step)
      throw Error(path + ": step " + std::to_string(index.step) +
                  " in the directory of step " + std::to_string(step));
    for (const TensorInfo &info : index.tensors)
      recordTensor(manifest, info, path);
    for (Chunk &chunk : index.chunks)
      manifest.chunks.push_back(std::move(chunk));
  }
  checkTiling(manifest, dir);

  durable::WriteBudget budget;
  durable::writeFileAtomically(
      dir + "/" + manifestFileName(), encodeManifest(manifest, "manifest"),
      &budget,
      {[step] { crashPoint("before-manifest-rename", step); },
       [step] { crashPoint("before-directory-fsync", step); }});
  crashPoint("after-commit", step);
  return manifest;
}
