//===- MicroBatch.h - micro-batches of a k-times larger batch ---*- C++ -*-===//
//
// rtx-accumulate-gradients and rtx-pipeline both run a function written for
// one micro-batch on a k-times larger batch. Micro-batch j takes rows j,
// j+k, j+2k, ... of the whole batch (the [k*B, ...] tensor viewed as
// [B, k, ...], column j): every row is in exactly one micro-batch, so the
// step is the same as with consecutive rows, and a data-parallel split of
// the batch stays local to each rank.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_DIALECT_RTX_TRANSFORMS_MICROBATCH_H
#define RTX_LIB_DIALECT_RTX_TRANSFORMS_MICROBATCH_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {

/// The type of a k-times larger batch (dimension 0 grows k times).
inline RankedTensorType growBatch(Type type, int64_t k) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[0] *= k;
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// Micro-batch `index` of `k`, of type `micro`, taken from `whole`.
inline Value sliceMicroBatch(OpBuilder &b, Location loc, Value whole,
                             int64_t index, int64_t k,
                             RankedTensorType micro) {
  SmallVector<int64_t> viewShape = {micro.getDimSize(0), k};
  viewShape.append(micro.getShape().begin() + 1, micro.getShape().end());
  auto viewType = RankedTensorType::get(viewShape, micro.getElementType());
  Value view = ReshapeOp::create(b, loc, viewType, whole);
  SmallVector<int64_t> starts(viewShape.size(), 0);
  SmallVector<int64_t> limits(viewShape);
  starts[1] = index;
  limits[1] = index + 1;
  SmallVector<int64_t> pieceShape(viewShape);
  pieceShape[1] = 1;
  Value piece = SliceOp::create(
      b, loc, RankedTensorType::get(pieceShape, micro.getElementType()), view,
      b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(limits));
  return ReshapeOp::create(b, loc, micro, piece).getResult();
}

} // namespace mlir::rtx

#endif // RTX_LIB_DIALECT_RTX_TRANSFORMS_MICROBATCH_H
