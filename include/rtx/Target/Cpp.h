//===- Cpp.h - emit a C++ or CUDA training program --------------*- C++ -*-===//

#ifndef RTX_TARGET_CPP_H
#define RTX_TARGET_CPP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::rtx {

/// The device an emitted program runs on.
enum class ProgramTarget { Cpu, Cuda };

/// Writes a self-contained program for `function` that links librtxrt: a
/// C++ program calling the CPU kernels, or a CUDA program calling the GPU
/// runtime (rtxrt/device/Gpu.h) with its arguments kept on the device. Emits a
/// diagnostic and fails on ops it cannot translate.
LogicalResult translateToProgram(ModuleOp module, func::FuncOp function,
                                 ProgramTarget target, llvm::raw_ostream &os);

} // namespace mlir::rtx

#endif // RTX_TARGET_CPP_H
