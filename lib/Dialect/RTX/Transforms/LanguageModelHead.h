//===- LanguageModelHead.h - the linear that makes a loss's logits -*- C++
//-*-===//
//
// rtx-pad-vocabulary and rtx-seed-shardings both find a language model's
// head from its loss: the rtx.linear whose result, possibly reshaped with
// the vocabulary kept last ([B, T, V] -> [B*T, V], as `logits.view(-1, V)`
// writes it), is the logits of an rtx.cross_entropy.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_TRANSFORMS_LANGUAGEMODELHEAD_H
#define RTX_LIB_TRANSFORMS_LANGUAGEMODELHEAD_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

namespace mlir::rtx {

/// The head of `loss`, with the reshapes between it and the loss (nearest
/// the loss first) in `reshapes` when given; null when the logits come from
/// something else, or, with `onlyUse` (to rewrite them), when a value on
/// the way has another use (after autodiff the backward pass reads them).
inline LinearOp
languageModelHead(CrossEntropyOp loss,
                  SmallVectorImpl<ReshapeOp> *reshapes = nullptr,
                  bool onlyUse = false) {
  Value v = loss.getLogits();
  int64_t vocab = cast<RankedTensorType>(v.getType()).getShape().back();
  while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    if ((onlyUse && !v.hasOneUse()) ||
        reshape.getInput().getType().getShape().back() != vocab)
      return {};
    if (reshapes)
      reshapes->push_back(reshape);
    v = reshape.getInput();
  }
  auto head = v.getDefiningOp<LinearOp>();
  return head && (!onlyUse || v.hasOneUse()) ? head : LinearOp();
}

} // namespace mlir::rtx

#endif // RTX_LIB_TRANSFORMS_LANGUAGEMODELHEAD_H
