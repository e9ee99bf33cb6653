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

} // namespace mlir::rtx

#endif // RTX_LIB_TARGET_EMITPROGRAMSPEC_H
