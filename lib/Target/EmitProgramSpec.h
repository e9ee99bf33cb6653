//===- EmitProgramSpec.h - an emitted program's main() ----------*- C++ -*-===//

#ifndef RTX_LIB_TARGET_EMITPROGRAMSPEC_H
#define RTX_LIB_TARGET_EMITPROGRAMSPEC_H

#include "rtx/Analysis/ProgramDescription.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::rtx {

/// Writes `int main()` of an emitted program: the rtxrt::ProgramSpec that
/// `program` describes (mesh, arguments, results, loss), the groups its
/// collectives use (`collectiveAxes`, C++ lists of axis names), the GPU
/// runtime for a CUDA program, and the call of rtxrt::runProgram with the
/// step function `step`.
void emitProgramMain(const ProgramDescription &program,
                     const std::vector<std::string> &collectiveAxes, bool cuda,
                     llvm::raw_ostream &os);

/// main() of a pipelined program: the step's results, then one
/// PipelineStage per coordinate with its arguments, results and step
/// function (`stepNames`, in coordinate order).
void emitPipelinedMain(const std::vector<ProgramDescription> &stages,
                       const std::vector<std::string> &stepNames,
                       const std::vector<std::string> &collectiveAxes,
                       bool cuda, llvm::raw_ostream &os);

} // namespace mlir::rtx

#endif // RTX_LIB_TARGET_EMITPROGRAMSPEC_H
