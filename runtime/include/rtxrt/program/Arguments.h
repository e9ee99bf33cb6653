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

#ifndef RTXRT_PROGRAM_ARGUMENTS_H
#define RTXRT_PROGRAM_ARGUMENTS_H

#include "rtxrt/core/ArgSpec.h"
#include "rtxrt/core/Block.h"
#include "rtxrt/core/MeshLayout.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace rtxrt {

namespace checkpoint {
class CheckpointReader;
} // namespace checkpoint
class ParamFiles;

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
  /// The parameters' values in the user's names (--params): a directory of
  /// NAME.npy, a safetensors file, or a directory of safetensors shards
  /// (with Hugging Face's model.safetensors.index.json). It must hold every
  /// parameter, unless paramsPartial is set. A parameter that is part of a
  /// user's tensor (ArgSpec::partOf) reads its block of that tensor when
  /// the files do not hold it under its own name.
  std::string params;
  /// Parameters that `params` lacks use their initializers, each named once
  /// on stderr (--params-partial); else a missing one is an error.
  bool paramsPartial = false;
  /// A --save-state directory: every parameter and optimizer state from
  /// DIR/KEY.npy (stateFilePath). Excludes params.
  std::string stateDir;
  /// A committed checkpoint (rtxrt/checkpoint/Checkpoint.h, --resume): every
  /// parameter and optimizer state, each rank reading only its block. Excludes
  /// params and stateDir.
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
  ~ArgumentLoader();

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
  /// Which tensor of the --params files holds a parameter's block, where,
  /// and that tensor's header.
  struct ParamLocation {
    std::string tensor;
    std::vector<int64_t> offsets;
    Shape shape;
    DType dtype;
  };

  /// `rank`'s block of parameter `arg`: given, from --state, from --params
  /// or from its initializer.
  Tensor paramBlock(const ArgSpec &arg, const LocalBlock &block, int64_t rank);
  /// The global tensor of a parameter given by the caller or in --state;
  /// undefined otherwise. `rank` asks for it.
  Tensor globalParam(const ArgSpec &arg, int64_t rank);
  /// Where the --params files hold `arg`'s block: under its own name, or
  /// (a part, ArgSpec::partOf) in the user's tensor; none when they hold
  /// neither. Throws when the tensor found does not fit the parameter.
  std::optional<ParamLocation> locateParam(const ArgSpec &arg,
                                           const LocalBlock &block);
  /// Reads the block at `at`, checked and converted to `arg`'s dtype.
  Tensor readParam(const ArgSpec &arg, const ParamLocation &at, int64_t rank);
  /// A parameter the --params files lack: an error, or its initializer
  /// under paramsPartial.
  Tensor missingParam(const ArgSpec &arg, const LocalBlock &block);
  /// `value` (`what` `name` read from `where`) in `dtype`, with a note on
  /// stderr from rank 0 once per tensor when that is a conversion.
  Tensor converted(const Tensor &value, DType dtype, const std::string &what,
                   const std::string &name, const std::string &where,
                   int64_t rank);
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
  /// The --params files; null without --params.
  std::unique_ptr<ParamFiles> params_;
  std::map<std::string, Tensor> givenInputs_, givenParams_;
  std::mutex mutex_;
  std::map<std::string, Tensor> globals_; // by key: "input:NAME", a path
  /// Parameters drawn under paramsPartial (each is named once).
  std::set<std::string> drawnParams_;
  /// Tensors read in another dtype and converted (each is named once).
  std::set<std::string> convertedArgs_;
};

class OffloadStore;

/// `rank`'s block of `arg` from `loader`; an offloaded argument goes to
/// `store` instead and the step gets a reference (an undefined Tensor).
/// rtx-run and emitted programs load their arguments through it.
Tensor loadOrOffload(ArgumentLoader &loader, OffloadStore *store,
                     const ArgSpec &arg, int64_t rank);

} // namespace rtxrt

#endif // RTXRT_PROGRAM_ARGUMENTS_H
