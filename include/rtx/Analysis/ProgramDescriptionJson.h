//===- ProgramDescriptionJson.h - a step's description as JSON --*- C++ -*-===//
//
// What describeProgram() decodes, written for tools outside C++ (the Python
// driver), so that none of them re-parses printed IR. rtx-translate
// --emit=description writes it; docs/runtime.md documents its fields.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PROGRAMDESCRIPTIONJSON_H
#define RTX_ANALYSIS_PROGRAMDESCRIPTIONJSON_H

#include "rtx/Analysis/ProgramDescription.h"

#include "llvm/Support/JSON.h"

namespace mlir::rtx {

/// One function's description: its arguments, results and loss.
llvm::json::Value toJson(const ProgramDescription &program);

/// The step `function` begins (all pipeline stages when it is one), with
/// its mesh, each stage's description, and `results`: the step's results in
/// the order rtx-run and emitted programs write them (resultN.npy), each
/// with its type, sharding, state key and gradient's parameter. Emits a
/// diagnostic and fails where describeProgram does, or when a pipeline
/// coordinate has no function.
FailureOr<llvm::json::Value> describeStepAsJson(ModuleOp module,
                                                func::FuncOp function);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_PROGRAMDESCRIPTIONJSON_H
