//===- Checkpoint.h - sharded, crash-safe checkpoints -----------*- C++ -*-===//
//
// A checkpoint holds logical (global) tensors as chunks: rectangular blocks,
// each written by the rank that holds it, each with its CRC32C. One manifest
// commits the checkpoint; until it is in place the checkpoint does not exist.
// Because chunks are addressed by global offsets, a checkpoint written by N
// ranks under one plan is read by M ranks under another: each reads only the
// blocks it needs (docs/checkpoint.md specifies the format).
//
//   ROOT/step-00000120/rank-00000.data        rank 0's chunks, back to back
//   ROOT/step-00000120/rank-00000.index.json  their records (written by rank 0)
//   ROOT/step-00000120/manifest.json          every tensor and chunk: commits
//
// Commit protocol (the order is what makes it crash-safe):
//   1. each rank writes its chunks, fsyncs its data file, writes its index
//      aside, fsyncs it, renames it, fsyncs the directory;
//   2. after every rank's step 1 (a barrier in the program), one rank
//      checks that the chunks tile every tensor exactly, writes
//      manifest.json aside, fsyncs it, renames it, fsyncs the directory.
// "Latest" is the highest step with a valid manifest; a directory without
// one (torn) or with a manifest or chunk that fails its check (corrupt) is
// skipped with a warning naming it, never loaded.
//
// Failpoints, to test every durability point (the chaos suite):
// RTX_FAULT_CHECKPOINT_CRASH_AT=POINT kills the process with SIGKILL there:
//   chunk:N            after the N-th chunk of this rank is written (0-based)
//   before-index-rename     this rank's index written aside, not renamed
//   before-manifest-rename  the manifest written aside and fsynced
//   before-directory-fsync  the manifest renamed, the rename not yet durable
//   after-commit            the checkpoint committed, nothing after it done
// RTX_FAULT_FAIL_WRITE_AFTER_BYTES=N fails a save with ENOSPC after N bytes.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_CHECKPOINT_H
#define RTXRT_CHECKPOINT_H

#include "rtxrt/core/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt::checkpoint {

/// A chunk whose bytes fail their CRC32C (CheckpointReader::read): the
/// checkpoint is corrupt, and a resume takes an older one.
class CorruptChunk : public Error {
public:
  using Error::Error;
};

/// CRC32C (Castagnoli, as iSCSI and ext4 use it) of `size` bytes, continuing
/// `crc` (0 starts one). Computed by ISA-L.
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

/// Parses "f32", "bf16", ... (dtypeName's spelling); throws naming `what`.
DType parseDType(const std::string &name, const std::string &what);

/// A logical tensor: its global shape and element type.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

/// One block [offsets, offsets + shape) of a logical tensor, stored at
/// [byteOffset, byteOffset + byteSize) of `file`, row-major.
struct Chunk {
  std::string tensor;
  std::vector<int64_t> offsets;
  Shape shape;
  std::string file;
  int64_t byteOffset = 0, byteSize = 0;
  uint32_t crc = 0;
  /// Where the block came from, for a person: "rank=3 mesh=dp:2,tp:2
  /// sharding=[tp,-]" or a ZeRO flat buffer's member range. Not used to
  /// read (offsets are).
  std::string placement;
};

/// What commits a checkpoint.
struct Manifest {
  int64_t step = 0;
  int64_t writers = 0; // ranks that wrote chunks
  std::vector<TensorInfo> tensors;
  std::vector<Chunk> chunks;
  /// Free-form facts of the run: the plan, the data position, the RNG
  /// counters, the program's name.
  std::map<std::string, std::string> metadata;

  const TensorInfo *find(const std::string &tensor) const;
};

/// A rectangular block of a tensor.
struct Box {
  std::vector<int64_t> offsets;
  Shape shape;
};
/// The elements [begin, end) of a row-major tensor of `shape` as at most
/// 2 * rank - 1 blocks, in order. A ZeRO shard holds a contiguous range of
/// each member's elements; stored as blocks, it reads back under any plan.
std::vector<Box> boxesOfRange(const Shape &shape, int64_t begin, int64_t end);

/// The name of step `step`'s directory: "step-00000120".
std::string checkpointDirName(int64_t step);

/// Writes one rank's chunks of the checkpoint of `step` under `root`.
class ShardWriter {
public:
  /// Creates ROOT and ROOT/step-N (durably) and this rank's data file.
  ShardWriter(const std::string &root, int64_t step, int64_t rank);
  ~ShardWriter();
  ShardWriter(const ShardWriter &) = delete;
  ShardWriter &operator=(const ShardWriter &) = delete;

  /// Appends `block` as the chunk at `offsets` of logical tensor `info`.
  /// Throws when the block does not fit inside the tensor.
  void add(const TensorInfo &info, const std::vector<int64_t> &offsets,
           const Tensor &block, const std::string &placement = "");
  /// fsyncs the data file and commits this rank's index (step 1).
  void finish();

  const std::string &directory() const { return dir_; }

private:
  struct State;
  std::unique_ptr<State> state_;
  std::string dir_;
};

/// Step 2: after every one of `writers` ranks finished, checks that their
/// chunks tile every tensor exactly (no gap, no overlap, no disagreement on
/// a tensor's shape or type) and commits the manifest. Throws naming the
/// tensor and the block otherwise; the checkpoint then stays uncommitted.
Manifest commitCheckpoint(const std::string &root, int64_t step,
                          int64_t writers,
                          const std::map<std::string, std::string> &metadata);

/// A committed checkpoint.
struct CheckpointRef {
  std::string dir;
  int64_t step = 0;
};

/// How much findCommitted checks of each checkpoint.
enum class Verify {
  Manifest, ///< the manifest's own CRC and the data files' sizes
  Chunks,   ///< and every chunk's CRC32C (reads the whole checkpoint)
};

/// The committed checkpoints under `root`, oldest first. Torn or corrupt
/// ones are skipped; each skip appends a line naming the directory and why
/// to `warnings`.
std::vector<CheckpointRef> findCommitted(const std::string &root, Verify verify,
                                         std::vector<std::string> *warnings);
/// The checkpoints under `root` whose manifest.json is there, oldest
/// first: those a save committed, whether whole now or not (a save that
/// stopped half-way has none).
std::vector<CheckpointRef> findManifested(const std::string &root);
/// The newest of findCommitted, if any, other than those in `skip`
/// (directories, as CheckpointReader::directory names them).
std::optional<CheckpointRef>
findLatest(const std::string &root, Verify verify,
           std::vector<std::string> *warnings,
           const std::vector<std::string> &skip = {});

/// --keep-checkpoints K: keeps the newest K whole checkpoints under a root
/// and removes the older ones, and every uncommitted directory older than
/// the newest committed one (a save that a crash stopped). A checkpoint
/// counts as kept only once its chunks' CRC32C are known good, so that a
/// corrupt newest one (found by a --resume that then read an older one) is
/// never what retention keeps alone: corrupt ones newer than the oldest kept
/// stay, for a later --resume to skip, and no checkpoint is removed while
/// none is known whole. What it learnt of each checkpoint is kept for its
/// next apply(): a run reads an older checkpoint once, not at every save.
class Retention {
public:
  Retention(const std::string &root, int64_t keep);
  /// This process committed `step`: the CRC32C of its chunks were computed
  /// from the blocks written, so it counts without being read back.
  void committedHere(int64_t step);
  /// `dir` was found corrupt already (a resume skipped it, `why`): it is
  /// not counted and not read again; apply() says so once.
  void knownCorrupt(const std::string &dir, const std::string &why);
  /// Removes what is not kept; returns the removed paths. Each checkpoint
  /// found corrupt appends a line naming it and why to `warnings`.
  std::vector<std::string> apply(std::vector<std::string> *warnings = nullptr);

private:
  /// Whether the chunks of `dir` are whole (read once, then remembered).
  bool whole(const std::string &dir, std::vector<std::string> *warnings);

  std::string root_;
  int64_t keep_;
  std::map<std::string, bool> known_; ///< directory -> whole
  /// Warnings of knownCorrupt() not yet given by apply().
  std::map<std::string, std::string> unsaid_;
};

/// Retention(root, keep).apply(): every checkpoint it counts is read.
std::vector<std::string> retainNewest(const std::string &root, int64_t keep);

/// Reads blocks of a committed checkpoint's logical tensors.
class CheckpointReader {
public:
  /// Loads and checks the manifest of `dir`; throws naming the file.
  explicit CheckpointReader(const std::string &dir);

  const Manifest &manifest() const { return manifest_; }
  const std::string &directory() const { return dir_; }

  /// The block [offsets, offsets + shape) of tensor `name`, assembled from
  /// the chunks it overlaps. Each chunk read is checked against its CRC32C;
  /// a mismatch throws CorruptChunk naming the file, the tensor and the
  /// chunk's offsets.
  Tensor read(const std::string &name, const std::vector<int64_t> &offsets,
              const Shape &shape) const;
  /// The whole tensor.
  Tensor read(const std::string &name) const;
  /// Reads every chunk and checks its CRC32C; throws at the first mismatch.
  void verifyChunks() const;

private:
  std::string readChunk(const Chunk &chunk) const;
  std::string dir_;
  Manifest manifest_;
};

} // namespace rtxrt::checkpoint

#endif // RTXRT_CHECKPOINT_H
