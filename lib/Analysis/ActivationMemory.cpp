//===- ActivationMemory.cpp - peak bytes of live activations --------------===//

#include "rtx/Analysis/ActivationMemory.h"

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <vector>

using namespace mlir;

int64_t mlir::rtx::tensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * std::max<int64_t>((bits + 7) / 8, 1);
}

int64_t mlir::rtx::peakActivationBytes(func::FuncOp function) {
  if (function.isExternal())
    return 0;
  Block &body = function.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t n = 0;
  for (Operation &op : body)
    position[&op] = n++;
  // Each result is live from its op to its last use: +bytes at its op,
  // -bytes after the last use (a result nobody uses dies at once).
  std::vector<int64_t> delta(n + 1, 0);
  for (Operation &op : body)
    for (Value result : op.getResults()) {
      int64_t bytes = tensorBytes(result.getType());
      int64_t last = position[&op];
      for (Operation *user : result.getUsers())
        last = std::max(last, position.lookup(
                                  body.findAncestorOpInBlock(*user)));
      delta[position[&op]] += bytes;
      delta[last + 1] -= bytes;
    }
  int64_t live = 0, peak = 0;
  for (int64_t i = 0; i < n; ++i) {
    live += delta[i];
    peak = std::max(peak, live);
  }
  return peak;
}

bool mlir::rtx::isCheapToRecompute(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         isa<SoftmaxOp, ReshapeOp, TransposeOp, BroadcastOp, SliceOp, SplitOp>(
             op);
}
