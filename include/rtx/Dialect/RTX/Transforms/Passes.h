//===- Passes.h - rtx passes ------------------------------------*- C++ -*-===//

#ifndef RTX_DIALECT_RTX_TRANSFORMS_PASSES_H
#define RTX_DIALECT_RTX_TRANSFORMS_PASSES_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::rtx {

/// rtx-distribute's default gradient bucket (`bucket-bytes`: 25 MiB, PyTorch
/// DDP's default); the planner prices buckets of this size.
constexpr int64_t kDefaultGradientBucketBytes = 26214400;

#define GEN_PASS_DECL
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"

} // namespace mlir::rtx

#endif // RTX_DIALECT_RTX_TRANSFORMS_PASSES_H
