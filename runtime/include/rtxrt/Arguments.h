//===- Arguments.h - where a training step's arguments come from -*- C++
//-*-===//
//
// A step takes parameters, optimizer state and data. Emitted programs
// (runProgram) and rtx-run's executor give them the same values from the
// same places with the same messages: parameters from a --state directory,
// a --params directory or their initializers; optimizer state from --state
// or zero; data from an --inputs directory or drawn from the seeded
// generator. Files hold global (logical) tensors; each rank takes its block.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_ARGUMENTS_H
#define RTXRT_ARGUMENTS_H

#include "rtxrt/Block.h"
#include "rtxrt/FlatBuffer.h"
#include "rtxrt/Kernels.h"
#include "rtxrt/MeshLayout.h"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace rtxrt {

namespace checkpoint {
class CheckpointReader;
} // namespace checkpoint

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

/// A drawn input, the same as rtx-run --random draws: floats from a standard
/// normal, integers uniformly below `bound`, keyed by (seed, "input:NAME").
Tensor randomInput(const std::string &name, int64_t seed, const Shape &shape,
                   DType dtype, int64_t bound);

/// The directory that holds the whole state a --save-state DIR wrote: DIR,
/// or the DIR.new / DIR.old that a save interrupted between its renames
/// left (runtime/lib/program/StateDirectory.h); DIR when none has
/// steps_done and DIR holds no .npy file (the reader then names the first
/// file it lacks). Throws when DIR holds .npy files but no steps_done: the
/// programs and rtx-run refuse such a folder alike. With `say`, a note on
/// stderr names the one it picked.
std::string committedStateDir(const std::string &dir, bool say = false);

/// Where arguments come from (the flags of a program or of rtx-run).
struct ArgumentSources {
  /// DIR/NAME.npy for inputs; empty: none.
  std::string inputsDir;
  /// Draw inputs that no file gives (else a missing input is an error).
  bool drawInputs = true;
  /// Appended to the message about a missing input (how to draw it).
  std::string drawHint;
  /// Seed of drawn inputs.
  int64_t seed = 0;
  /// DIR/NAME.npy for parameters. DIR must be a directory holding every
  /// parameter, unless paramsPartial is set.
  std::string paramsDir;
  /// Parameters that paramsDir lacks use their initializers, each named once
  /// on stderr (--params-partial); else a missing one is an error.
  bool paramsPartial = false;
  /// A --save-state directory: every parameter and optimizer state from
  /// DIR/KEY.npy (stateFilePath). Excludes paramsDir.
  std::string stateDir;
  /// A committed checkpoint (rtxrt/Checkpoint.h, --resume): every parameter
  /// and optimizer state, each rank reading only its block. Excludes
  /// paramsDir and stateDir.
  std::shared_ptr<const checkpoint::CheckpointReader> checkpoint;
  /// Keep the global tensors read from files, for the other ranks of this
  /// process (rtx-run's simulated ranks read each file once).
  bool keepGlobals = false;
};

/// Gives each rank its block of each argument. Thread-safe: rtx-run's ranks
/// share one.
class ArgumentLoader {
public:
  /// Throws Error when `sources` contradict themselves or name a directory
  /// that is not there.
  ArgumentLoader(const MeshLayout &mesh, ArgumentSources sources);

  /// Global values given by the caller, by name; they come before any file
  /// (rtx-run --compare gives the reference's inputs, gradient checks give
  /// parameters).
  void giveInput(const std::string &name, const Tensor &global) {
    givenInputs_[name] = global;
  }
  void giveParam(const std::string &name, const Tensor &global) {
    givenParams_[name] = global;
  }

  /// `rank`'s block of `arg` (a host tensor).
  Tensor block(const ArgSpec &arg, int64_t rank);
  /// The global value of an input (read, given or drawn), checked against
  /// the program's global shape and dtype.
  Tensor globalInput(const ArgSpec &arg);
  /// The global shape of `arg` on this mesh.
  Shape globalShape(const ArgSpec &arg) const;

private:
  /// The global tensor of a parameter from a file or the caller; undefined
  /// when it comes from its initializer. `rank` asks for it.
  Tensor globalParam(const ArgSpec &arg, int64_t rank);
  Tensor globalState(const ArgSpec &arg, int64_t rank);
  /// The global tensor of `arg` (a `what`: parameter, optimizer state) in
  /// the .npy file `path`, in the program's dtype. A NaN in it is an error
  /// (training from it gives loss=nan without a word); another dtype (f64,
  /// int32) is converted, with a note on stderr once per tensor from rank 0.
  Tensor fromFile(const ArgSpec &arg, const std::string &what,
                  const std::string &path, int64_t rank);
  /// `arg`'s block at `block` from sources_.checkpoint.
  Tensor checkpointBlock(const ArgSpec &arg, const LocalBlock &block) const;
  /// readNpy(path), through the cache when keepGlobals is set.
  Tensor read(const std::string &path);

  MeshLayout mesh_;
  ArgumentSources sources_;
  std::map<std::string, Tensor> givenInputs_, givenParams_;
  std::mutex mutex_;
  std::map<std::string, Tensor> globals_; // by key: "input:NAME", a path
  /// Parameters drawn under paramsPartial (each is named once).
  std::set<std::string> drawnParams_;
  /// Arguments read in another dtype and converted (each is named once).
  std::set<std::string> convertedArgs_;
};

} // namespace rtxrt

#endif // RTXRT_ARGUMENTS_H
