//===- Interpreter.h - one rank's interpretation of a function --*- C++ -*-===//

#ifndef RTX_LIB_EXECUTOR_INTERPRETER_H
#define RTX_LIB_EXECUTOR_INTERPRETER_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtxrt/core/MeshLayout.h"
#include "rtxrt/program/Program.h"
#include "rtxrt/core/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::rtx {

/// A trainable parameter: an `rtx.param` op, or a function argument that
/// rtx-optimizer made from one (attributes `rtx.param`, `rtx.init`, ...).
struct ParamSpec {
  std::string name;
  InitAttr init;
  int64_t seed = 0;
  RankedTensorType type;
  ShardingAttr sharding;
  /// `rtx.part_of`: the block of a user's tensor it is; null otherwise.
  DictionaryAttr partOf;
};
ParamSpec getParamSpec(ParamOp op);

/// What a rank needs from outside the function it runs.
struct RankEnvironment {
  int64_t rank = 0;
  /// The mesh the ranks form; empty (no axes) on a single rank.
  rtxrt::MeshLayout mesh;
  /// The step's collectives, messages and offloaded buffers, reached as
  /// emitted programs reach them. Never null.
  rtxrt::StepContext *context = nullptr;
  /// False on a single rank: collectives and messages are then an error.
  bool hasPeers = false;
  /// This rank's value of a parameter / named input.
  std::function<rtxrt::Tensor(const ParamSpec &)> getParam;
  std::function<rtxrt::Tensor(InputOp)> getInput;
};

/// rtx element type -> runtime dtype; throws for types rtx-run lacks.
rtxrt::DType toDType(Type type);
/// "file.mlir:3:8" for a file location.
std::string formatLocation(Location loc);
/// "op 'rtx.matmul' at file.mlir:3:8" for messages.
std::string describe(Operation *op);

/// Runs `function` on one rank with the given argument values.
std::vector<rtxrt::Tensor> interpret(func::FuncOp function,
                                     const std::vector<rtxrt::Tensor> &args,
                                     RankEnvironment &env);

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_INTERPRETER_H
