//===- Safetensors.h - read blocks of safetensors files ---------*- C++ -*-===//
//
// Hugging Face's safetensors format (github.com/huggingface/safetensors,
// "Format"): an 8-byte little-endian header length N, N bytes of JSON
// {NAME: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {...}}, then the data, each tensor row-major at [begin, end) of the bytes
// after the header. No Debian C++ library reads it (the reference
// implementation is Rust, with Python bindings), hence this reader; the
// header is parsed with nlohmann-json.
//
// A rank of a sharded program needs only its block of each tensor: the
// reader pread()s the rows (the contiguous runs) of that block and nothing
// else, so a 7B-parameter file is never read whole by any process.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_CORE_SAFETENSORS_H
#define RTXRT_CORE_SAFETENSORS_H

#include "rtxrt/core/Tensor.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {

/// One tensor of a safetensors header.
struct SafetensorsEntry {
  std::string dtype; // as the file names it: "F32", "BF16", "I64", ...
  Shape shape;
  /// Its bytes, relative to the start of the data (after the header).
  int64_t begin = 0, end = 0;
};

/// An open safetensors file: its header, checked against the file's size
/// when opened (a truncated file or an entry out of bounds is an Error that
/// names the file and the tensor), and reads of blocks of its tensors.
/// Thread-safe: reads use pread on one descriptor.
class SafetensorsFile {
public:
  explicit SafetensorsFile(const std::string &path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return path_; }
  /// The entry of tensor `name`; null when the file has none.
  const SafetensorsEntry *find(const std::string &name) const;
  const std::map<std::string, SafetensorsEntry> &tensors() const {
    return tensors_;
  }
  /// The header's "__metadata__" (string values; others as JSON text).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

  /// The block of tensor `name` at `offsets` with shape `blockShape`, in
  /// the dtype it reads as (dtypeOf). Reads only that block's bytes.
  Tensor readBlock(const std::string &name, const std::vector<int64_t> &offsets,
                   const Shape &blockShape) const;
  /// The whole tensor `name`.
  Tensor read(const std::string &name) const;

  /// The dtype a tensor of the file's dtype `dtype` reads as: F32, F64,
  /// F16, BF16, I64, I32 as themselves, BOOL as i1, U8, I8, I16 widened to
  /// i32. Throws Error naming the file and `what` for any other dtype.
  DType dtypeOf(const std::string &dtype, const std::string &what) const;

  /// Bytes of tensor data read so far (tests check that a rank reads only
  /// its block).
  int64_t bytesRead() const { return bytesRead_.load(); }

private:
  void readHeader();
  void readRun(void *into, int64_t fileOffset, int64_t bytes,
               const std::string &name) const;

  std::string path_;
  int fd_ = -1;
  int64_t fileSize_ = 0;
  int64_t dataStart_ = 0;
  std::map<std::string, SafetensorsEntry> tensors_;
  std::map<std::string, std::string> metadata_;
  mutable std::atomic<int64_t> bytesRead_{0};
};

/// The tensors of a safetensors checkpoint: one file, or a directory of
/// shards that Hugging Face's model.safetensors.index.json maps
/// ({"weight_map": {NAME: FILE}}), or (without an index) every *.safetensors
/// file of a directory.
class SafetensorsSet {
public:
  /// Throws Error naming `path` when it is none of those, or when a shard
  /// lacks a tensor the index gives it, or two files hold the same name.
  explicit SafetensorsSet(const std::string &path);

  /// True when `path` is a safetensors file or a directory of them (an
  /// index, or *.safetensors files and no .npy file).
  static bool holdsSafetensors(const std::string &path);

  /// The file that holds tensor `name`; null when none does.
  const SafetensorsFile *fileOf(const std::string &name) const;
  const std::string &path() const { return path_; }

private:
  void openIndex(const std::string &indexPath);
  void add(const std::string &file);

  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile *> byName_;
};

/// The bytes of a safetensors file holding `tensors` (in this order, each
/// in its own dtype; i1 as BOOL). `path` names the file in errors.
std::string
encodeSafetensors(const std::vector<std::pair<std::string, Tensor>> &tensors,
                  const std::map<std::string, std::string> &metadata,
                  const std::string &path);

} // namespace rtxrt

#endif // RTXRT_CORE_SAFETENSORS_H
