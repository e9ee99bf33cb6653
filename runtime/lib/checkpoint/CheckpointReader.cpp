//===- CheckpointReader.cpp - finding and reading committed checkpoints ---===//

#include "DurableFiles.h"
#include "Failpoints.h"
#include "Manifest.h"
#include "Tiling.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::checkpoint;

std::vector<std::pair<int64_t, std::string>>
checkpoint::stepDirectories(const std::string &root) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR *d = opendir(root.c_str());
  if (!d) {
    if (errno == ENOENT)
      return found;
    durable::fail("cannot list", root, errno);
  }
  while (dirent *entry = readdir(d)) {
    const char *name = entry->d_name;
    if (std::strncmp(name, "step-", 5) != 0)
      continue;
    char *end = nullptr;
    long long step = std::strtoll(name + 5, &end, 10);
    // Only the names checkpointDirName writes: step-00000120, not a
    // step-7.tmp someone left.
    if (*end != '\0' || end == name + 5 || checkpointDirName(step) != name)
      continue;
    found.emplace_back(step, root + "/" + name);
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

int64_t fileSize(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return -1;
  return info.st_size;
}

/// The part of the block [offsets, offsets + shape) that `chunk` holds,
/// copied into `out` (the block, row-major). Both are row-major with
/// element size `elem`.
void copyOverlap(const Chunk &chunk, const std::string &bytes,
                 const std::vector<int64_t> &offsets, const Shape &shape,
                 size_t elem, char *out) {
  size_t rank = shape.size();
  std::vector<int64_t> lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max(offsets[d], chunk.offsets[d]);
    hi[d] = std::min(offsets[d] + shape[d], chunk.offsets[d] + chunk.shape[d]);
    if (lo[d] >= hi[d])
      return;
  }
  if (rank == 0) {
    std::memcpy(out, bytes.data(), elem);
    return;
  }
  // Rows along the last dimension are contiguous in both: copy row by row,
  // walking the other dimensions of the overlap like an odometer.
  size_t rowBytes = static_cast<size_t>(hi[rank - 1] - lo[rank - 1]) * elem;
  std::vector<int64_t> at = lo;
  while (true) {
    int64_t src = 0, dst = 0;
    for (size_t d = 0; d < rank; ++d) {
      src = src * chunk.shape[d] + (at[d] - chunk.offsets[d]);
      dst = dst * shape[d] + (at[d] - offsets[d]);
    }
    std::memcpy(out + dst * elem, bytes.data() + src * elem, rowBytes);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++at[d] < hi[d])
        break;
      at[d] = lo[d];
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

} // namespace

CheckpointReader::CheckpointReader(const std::string &dir)
    : dir_(durable::normalized(dir)) {
  std::string path = dir_ + "/" + manifestFileName();
  if (!durable::exists(path))
    throw Error("checkpoint " + dir_ +
                " has no manifest.json: it was never committed (a save that "
                "stopped half-way)");
  manifest_ = decodeManifest(durable::readFile(path), "manifest", path);
  // As the commit checked it: a manifest whose CRC32C still matches may
  // have been written by hand or by another tool.
  checkTiling(manifest_, path);
  for (const Chunk &chunk : manifest_.chunks) {
    int64_t size = fileSize(dir_ + "/" + chunk.file);
    if (size < chunk.byteOffset + chunk.byteSize)
      throw Error("checkpoint " + dir_ + ": " + chunk.file + " is " +
                  (size < 0
                       ? std::string("missing")
                       : "cut short (" + std::to_string(size) + " bytes)") +
                  "; the chunk of " + chunk.tensor + " at " +
                  shapeToString(chunk.offsets) + " ends at byte " +
                  std::to_string(chunk.byteOffset + chunk.byteSize));
  }
}

std::string CheckpointReader::readChunk(const Chunk &chunk) const {
  std::string path = dir_ + "/" + chunk.file;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    durable::fail("cannot read", path, errno);
  std::string bytes(static_cast<size_t>(chunk.byteSize), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pread(fd, &bytes[done], bytes.size() - done,
                      chunk.byteOffset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n == 0 ? EIO : errno;
      close(fd);
      durable::fail("cannot read", path, error);
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (crc32c(bytes.data(), bytes.size()) != chunk.crc)
    throw CorruptChunk("checkpoint " + dir_ + ": the chunk of " + chunk.tensor +
                       " at " + shapeToString(chunk.offsets) + " in " +
                       chunk.file + " (bytes " +
                       std::to_string(chunk.byteOffset) + "+" +
                       std::to_string(chunk.byteSize) +
                       ") fails its CRC32C: the file is corrupt");
  return bytes;
}

Tensor CheckpointReader::read(const std::string &name,
                              const std::vector<int64_t> &offsets,
                              const Shape &shape) const {
  const TensorInfo *info = manifest_.find(name);
  if (!info)
    throw Error("checkpoint " + dir_ + " holds no tensor named " + name);
  if (offsets.size() != info->shape.size() ||
      shape.size() != info->shape.size())
    throw Error("checkpoint " + dir_ + ": a block of rank " +
                std::to_string(shape.size()) + " asked of " + name +
                shapeToString(info->shape));
  for (size_t d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || shape[d] < 0 ||
        offsets[d] + shape[d] > info->shape[d])
      throw Error("checkpoint " + dir_ + ": the block at " +
                  shapeToString(offsets) + " of shape " + shapeToString(shape) +
                  " reaches outside " + name + shapeToString(info->shape));
  Tensor block(shape, info->dtype);
  size_t elem = dtypeSize(info->dtype);
  for (const Chunk &chunk : manifest_.chunks) {
    if (chunk.tensor != name)
      continue;
    bool touches = true;
    for (size_t d = 0; d < shape.size(); ++d)
      touches = touches && chunk.offsets[d] < offsets[d] + shape[d] &&
                offsets[d] < chunk.offsets[d] + chunk.shape[d];
    if (!touches || numElements(shape) == 0)
      continue;
    copyOverlap(chunk, readChunk(chunk), offsets, shape, elem,
                static_cast<char *>(block.raw()));
    // A failure in the middle of a recovery (the chaos suite).
    crashPoint("resume-read", manifest_.step);
  }
  return block;
}

Tensor CheckpointReader::read(const std::string &name) const {
  const TensorInfo *info = manifest_.find(name);
  if (!info)
    throw Error("checkpoint " + dir_ + " holds no tensor named " + name);
  return read(name, std::vector<int64_t>(info->shape.size(), 0), info->shape);
}

void CheckpointReader::verifyChunks() const {
  for (const Chunk &chunk : manifest_.chunks)
    readChunk(chunk);
}

/// Checks the checkpoint of `step` in `dir`; on failure, appends why to
/// `warnings` and returns false.
static bool isCommitted(int64_t step, const std::string &dir, Verify verify,
                        std::vector<std::string> *warnings) {
  try {
    if (!durable::exists(dir + "/" + manifestFileName()))
      throw Error("no manifest.json (never committed: a save that stopped "
                  "half-way)");
    CheckpointReader reader(dir);
    if (reader.manifest().step != step)
      throw Error(dir + "/manifest.json: step " +
                  std::to_string(reader.manifest().step) +
                  " in the directory of step " + std::to_string(step));
    if (verify == Verify::Chunks)
      reader.verifyChunks();
    return true;
  } catch (const Error &e) {
    if (warnings)
      warnings->push_back("skipping checkpoint " + dir + ": " + e.what());
    return false;
  }
}

std::vector<CheckpointRef>
checkpoint::findCommitted(const std::string &root, Verify verify,
                          std::vector<std::string> *warnings) {
  std::vector<CheckpointRef> committed;
  for (auto &[step, dir] : stepDirectories(durable::normalized(root)))
    if (isCommitted(step, dir, verify, warnings))
      committed.push_back({dir, step});
  return committed;
}

std::optional<CheckpointRef>
checkpoint::findLatest(const std::string &root, Verify verify,
                       std::vector<std::string> *warnings,
                       const std::vector<std::string> &skip) {
  // From the newest down, so that a good newest checkpoint costs one check.
  auto all = stepDirectories(durable::normalized(root));
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (std::find(skip.begin(), skip.end(), it->second) == skip.end() &&
        isCommitted(it->first, it->second, verify, warnings))
      return CheckpointRef{it->second, it->first};
  return std::nullopt;
}

std::vector<CheckpointRef> checkpoint::findManifested(const std::string &root) {
  std::vector<CheckpointRef> found;
  for (auto &[step, dir] : stepDirectories(durable::normalized(root)))
    if (durable::exists(dir + "/" + manifestFileName()))
      found.push_back({dir, step});
  return found;
}
