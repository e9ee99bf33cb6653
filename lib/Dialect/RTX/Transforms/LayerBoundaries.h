//===- LayerBoundaries.h - where a model's layers meet ----------*- C++ -*-===//
//
// A layer boundary is a place in a forward pass's op order where exactly one
// computed tensor is live (a transformer's residual stream between blocks):
// rtx-split-stages cuts pipeline stages there, and rtx-recompute's full
// policy keeps only those tensors.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_DIALECT_RTX_TRANSFORMS_LAYERBOUNDARIES_H
#define RTX_LIB_DIALECT_RTX_TRANSFORMS_LAYERBOUNDARIES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <vector>

namespace mlir::rtx {

struct LayerBoundary {
  int64_t position; // the boundary lies before ops[position]
  Value live;       // the one tensor live across it
};

/// The layer boundaries of `ops` (in program order). Uses by other ops (the
/// return, a backward pass) count as after the last op, unless
/// `onlyTheseUses`: then only uses among `ops` count (a forward pass whose
/// activations the backward pass also reads).
inline std::vector<LayerBoundary>
findLayerBoundaries(ArrayRef<Operation *> ops, bool onlyTheseUses = false) {
  int64_t n = ops.size();
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  // A value defined at i and last used at `last` is live before every op in
  // (i, last]: +1 at i + 1, -1 at last + 1.
  std::vector<int64_t> delta(n + 2, 0);
  std::vector<Value> opened(n + 1);
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value result : op->getResults()) {
      int64_t last = -1;
      for (Operation *user : result.getUsers())
        if (index.count(user) || !onlyTheseUses)
          last = std::max(last, index.count(user) ? index[user] : n);
      if (last > int64_t(i)) {
        delta[i + 1] += 1;
        delta[last + 1] -= 1;
      }
    }
  std::vector<LayerBoundary> boundaries;
  int64_t live = 0;
  for (int64_t c = 1; c < n; ++c) {
    live += delta[c];
    if (live != 1)
      continue;
    // The one value defined before c and used at or after it.
    for (int64_t i = c - 1; i >= 0; --i) {
      Value found;
      for (Value result : ops[i]->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return index.count(user) ? index[user] >= c : !onlyTheseUses;
            }))
          found = result;
      if (found) {
        boundaries.push_back({c, found});
        break;
      }
    }
  }
  return boundaries;
}

} // namespace mlir::rtx

#endif // RTX_LIB_DIALECT_RTX_TRANSFORMS_LAYERBOUNDARIES_H
