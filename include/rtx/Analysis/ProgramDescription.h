//===- ProgramDescription.h - what a training step takes and gives -*- C++ -*-//
//
// A function that rtx-optimizer made into a training step says, in attributes
// on its arguments and results, what each value is: a parameter with its
// initializer and seed, a piece of optimizer state, or a batch of data (a
// plain argument, or a named `rtx.input` op), and which result carries which
// state into the next step. describeProgram() decodes them once; the emitter
// serialises the description into the emitted program's rtxrt::ProgramSpec,
// and rtx-run's executor runs from it, so both read the IR the same way.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PROGRAMDESCRIPTION_H
#define RTX_ANALYSIS_PROGRAMDESCRIPTION_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::rtx {

/// A value that enters the step from outside: a function argument or an
/// `rtx.input` op.
struct ProgramArgument {
  enum class Role {
    /// A trainable parameter (`rtx.param`, `rtx.init`, `rtx.seed`).
    Parameter,
    /// Optimizer state (`rtx.state` without `rtx.param`): zero at the start.
    OptimizerState,
    /// A batch of data: read from a file or drawn.
    Data,
  };
  Role role = Role::Data;
  /// The parameter's name, the state's key, or the data's name: an
  /// `rtx.input`'s name, or `argN` for the N-th data argument (counted among
  /// the data arguments only, so a model's `arg0` keeps its name after
  /// rtx-optimizer puts parameters and state first).
  std::string name;
  /// The key of the result that replaces this value after a step: its
  /// `rtx.state`; for a parameter without one, `param:NAME` (what
  /// rtx-optimizer writes). Empty for data.
  std::string stateKey;
  /// Parameters: the initializer and its seed.
  InitAttr init;
  int64_t seed = 0;
  /// Parameters: `rtx.part_of` ({name, dim, offset}) when the parameter is
  /// a block of a user's tensor; null otherwise.
  DictionaryAttr partOf;
  /// Integer data: drawn values lie below this bound (getIntegerDataBound).
  int64_t dataBound = 2;
  /// The local (per-rank) type and the sharding that relates it to the
  /// global value; a null sharding is a replicated value.
  RankedTensorType type;
  ShardingAttr sharding;
  /// The block argument, or the `rtx.input` op's result.
  Value value;
  /// The function argument's number; none for an `rtx.input`.
  std::optional<unsigned> argNumber;
  /// A flat buffer (`rtx.flat`, rtx-shard-state): its shard axis, length,
  /// and each member (a parameter or a piece of state, with its local type
  /// and sharding over the other axes) with its offset.
  std::string flatAxis;
  int64_t flatLength = 0;
  std::vector<ProgramArgument> members;
  std::vector<int64_t> offsets;
  /// `rtx.offload`: the tier ("cpu", "nvme") that holds this buffer between
  /// steps; the step gets a reference, not the value. Empty: in memory.
  std::string offload;
};

/// A result of the step.
struct ProgramResult {
  /// The `rtx.state` key it carries into the next step, or empty.
  std::string stateKey;
  /// The index in ProgramDescription::arguments of the argument with that
  /// key; -1 when it has no key or no argument takes it.
  int64_t feedsArgument = -1;
  RankedTensorType type;
  ShardingAttr sharding;
  /// Its index among the step's results (`rtx.step_result`), or -1.
  int64_t index = -1;
  /// A gradient's parameter (`rtx.grad_of`), or empty.
  std::string gradOf;
  /// A flat buffer, as for ProgramArgument: each member a result of its own,
  /// with its state key, local type, sharding and index.
  std::string flatAxis;
  int64_t flatLength = 0;
  std::vector<ProgramResult> members;
  std::vector<int64_t> offsets;
  /// `rtx.offload`: written back to this tier by the step, which returns a
  /// reference (the run reads the value from the tier at its end).
  std::string offload;
};

struct ProgramDescription {
  func::FuncOp function;
  /// The mesh the ranks form; null for a single rank.
  MeshOp mesh;
  /// The function's arguments in order, then its `rtx.input` ops in order:
  /// the order of the `args` an emitted step function takes.
  std::vector<ProgramArgument> arguments;
  std::vector<ProgramResult> results;
  /// The loss: the first scalar float result that carries no state; -1 when
  /// there is none.
  int64_t lossResult = -1;

  /// The argument with this value (a block argument or an `rtx.input`
  /// result), or null.
  const ProgramArgument *find(Value value) const;
};

/// Decodes `function`'s arguments and results, for ranks that form `mesh`
/// (null: a single rank). Emits a diagnostic on `function` and fails when a
/// parameter lacks its initializer.
FailureOr<ProgramDescription> describeProgram(func::FuncOp function,
                                              MeshOp mesh);

/// The ops of the step's forward pass: in a pipeline coordinate's function
/// those rtx-autodiff did not mark `rtx.backward`; otherwise the ops the loss
/// depends on (none without a loss). Ops that passes add after rtx-pipeline
/// carry no mark, so there they count as forward.
llvm::DenseSet<Operation *> forwardOps(const ProgramDescription &program);

/// The mesh of a program: the module's only `rtx.mesh`, or null when it has
/// none. Emits a diagnostic and fails when it has several.
FailureOr<MeshOp> getProgramMesh(ModuleOp module);

/// The functions one step runs, by pipeline coordinate: those rtx-pipeline
/// made for `function`'s module when `function` is one of them (a null
/// entry where a coordinate has none), else just `function`.
SmallVector<func::FuncOp> getStepFunctions(ModuleOp module,
                                           func::FuncOp function);

/// describeProgram of each of `functions` (getStepFunctions' list) on
/// `mesh`, in order; an error on `module` naming the pipeline coordinate
/// that has no function.
FailureOr<std::vector<ProgramDescription>>
describeStepStages(ModuleOp module, ArrayRef<func::FuncOp> functions,
                   MeshOp mesh);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_PROGRAMDESCRIPTION_H
