//===- ParamFiles.h - the files --params reads parameters from --*- C++ -*-===//
//
// --params takes a directory of NAME.npy (rtx's exchange format), a
// safetensors file (Hugging Face's), or a directory of safetensors shards.
// ArgumentLoader asks each the same questions: is there a tensor of this
// name, of which shape and dtype, and what is this block of it.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_PARAMFILES_H
#define RTXRT_PROGRAM_PARAMFILES_H

#include "rtxrt/core/Tensor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

/// What a file says of one of its tensors before any data is read.
struct TensorHeader {
  DType dtype;
  Shape shape;
};

class ParamFiles {
public:
  /// The files at `path` (the value of --params). Throws Error naming
  /// --params and `path` when there is nothing there. `keepGlobals`: keep
  /// what is read whole (a .npy file) for the next rank that asks.
  static std::unique_ptr<ParamFiles> open(const std::string &path,
                                          bool keepGlobals);
  virtual ~ParamFiles() = default;

  /// The header of tensor `name`; none when the files lack it.
  virtual std::optional<TensorHeader> find(const std::string &name) = 0;
  /// The block at `offsets` of shape `shape` of tensor `name` (which find
  /// found), in the file's dtype.
  virtual Tensor readBlock(const std::string &name,
                           const std::vector<int64_t> &offsets,
                           const Shape &shape) = 0;
  /// The file that holds tensor `name` (which find found).
  virtual std::string file(const std::string &name) const = 0;
  /// What a message says the files should hold for tensor `name`:
  /// "DIR/NAME.npy", or "tensor 'NAME' in FILE".
  virtual std::string expected(const std::string &name) const = 0;
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_PARAMFILES_H
