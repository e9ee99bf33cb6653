//===- ArgSpec.h - one argument of a training step -------------*- C++ -*-===//
//
// What every layer knows of a step's argument: its role, initializer, local
// shape, sharding and (for ZeRO flat buffers) its members and offload tier.
// Where its value comes from is the program layer's (rtxrt/program/
// Arguments.h).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_CORE_ARGSPEC_H
#define RTXRT_CORE_ARGSPEC_H

#include "rtxrt/core/FlatBuffer.h"
#include "rtxrt/core/KernelEnums.h"
#include "rtxrt/core/MeshLayout.h"
#include "rtxrt/core/Tensor.h"

#include <string>
#include <vector>

namespace rtxrt {

/// A parameter that is a block of a user's tensor (the `rtx.part_of`
/// attribute of issue 36, contract 1; docs/python.md "Weights in and out"):
/// the block [offset, offset + its global size along `dim`) of dimension
/// `dim` of the user's tensor `name`, every other dimension whole. A fused
/// projection (GPT-2's `c_attn.weight` [C, 3C]) split into q, k and v
/// parameters `c_attn.weight@0`, `@1`, `@2` is the common case.
struct PartOf {
  std::string name; // empty: the parameter is a tensor of its own
  int64_t dim = 0;
  int64_t offset = 0;
  /// The size of `dim` in the user's tensor (0: unknown); initial values
  /// are then drawn as the user's tensor's block.
  int64_t size = 0;
};

/// One argument of a step: its role, where its value comes from, and its
/// local (per-rank) shape.
struct ArgSpec {
  enum Kind { Param, State, Input } kind = Input;
  std::string name; // parameter name, state key, or input name
  /// The key of the result that replaces it after each step (param:NAME,
  /// exp_avg:NAME, step, ...); empty for data.
  std::string state;
  InitKind init = InitKind::Zeros;
  double a = 0, b = 0;
  int64_t seed = 0;
  /// A parameter that is a block of a user's tensor; files in the user's
  /// names give it that block.
  PartOf partOf;
  Shape shape; // local shape
  DType dtype = DType::F32;
  Sharding sharding;
  int64_t bound = 2; // integer inputs are drawn below this
  /// A flat buffer (rtx-shard-state): this rank's shard of `members`, each
  /// loaded as an argument of its own and packed as `flat` says.
  FlatLayout flat;
  std::vector<ArgSpec> members;
  /// "cpu" or "nvme": a flat buffer that lives in the offload tier between
  /// steps (rtx-shard-state{offload}); the step gets a reference (an
  /// undefined Tensor) and fetches it. Empty: passed in memory.
  std::string offload;
};

/// The key of an argument's state: `state`, or for a parameter without one
/// param:NAME (rtx-optimizer's key); empty for data.
std::string stateKeyOf(const ArgSpec &arg);

/// A block of an argument in the user's tensor it is a part of
/// (ArgSpec::partOf, its size along the part's dimension known): that
/// tensor's name and shape and the block's offsets in it; the argument's
/// own name (`own`), shape and offsets when it is no such part. Parameter
/// files, initial values and checkpoints all place parts this way.
struct UserBlock {
  std::string name;
  Shape global;
  std::vector<int64_t> offsets;
  bool isPart = false;
};
UserBlock userBlockOf(const ArgSpec &arg, const std::string &own,
                      const Shape &global, const std::vector<int64_t> &offsets);

/// Where a block of an argument's state lies in a checkpoint: the key,
/// global shape and offsets of the user's tensor when the argument is a
/// part of one (ArgSpec::partOf, its size known), else its own. Parts are
/// stored as blocks of the user's tensor, so a checkpoint written where tp
/// split a fused projection reads back where it did not, and back.
struct CheckpointPlace {
  std::string key;
  Shape global;
  std::vector<int64_t> offsets;
};
CheckpointPlace checkpointPlaceOf(const ArgSpec &arg, const Shape &global,
                                  const std::vector<int64_t> &offsets);

/// A drawn input, the same as rtx-run --random draws: floats from a standard
/// normal, integers uniformly below `bound`, keyed by (seed, "input:NAME").
Tensor randomInput(const std::string &name, int64_t seed, const Shape &shape,
                   DType dtype, int64_t bound);

} // namespace rtxrt

#endif // RTXRT_CORE_ARGSPEC_H
