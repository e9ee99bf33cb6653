//===- KernelBinding.h - an op's kernel call, resolved ---------*- C++ -*-===//
//
// Finds the runtime kernel an op's binding (KernelOpInterface) names and
// checks the binding's arguments against the kernel's registered signature,
// so that a binding written wrong is a diagnostic at the op, in rtx-run and
// in rtx-translate alike, and never a crash or a wrong call.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TARGET_KERNELBINDING_H
#define RTX_TARGET_KERNELBINDING_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtxrt/kernels/KernelRegistry.h"

#include <string>

namespace mlir::rtx {

/// The parameter kind an argument of a kernel call is passed as.
rtxrt::KernelParamKind getParamKind(const KernelArg &arg);

/// The kernel `call` names, if it exists and takes `call`'s arguments and
/// returns `numResults` results; otherwise null, with the reason in `error`.
const rtxrt::KernelEntry *
resolveKernel(const KernelCall &call, unsigned numResults, std::string &error);

} // namespace mlir::rtx

#endif // RTX_TARGET_KERNELBINDING_H
