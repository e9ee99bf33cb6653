//===- RTXCollectives.cpp - verification of collectives -------------------===//
//
// One verifier for every collective, synchronous or async: they share their
// operands and attributes, so the checks live once, here.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

using namespace mlir;
using namespace mlir::rtx;


/// The tensor a collective produces: its result, or the value its token
/// carries. Null for ops that produce no tensor (send).
static RankedTensorType getProducedType(Operation *op) {
  if (op->getNumResults() == 0)
    return {};
  Type type = op->getResult(0).getType();
  if (auto token = dyn_cast<TokenType>(type))
    type = token.getValueType();
  return dyn_cast_or_null<RankedTensorType>(type);
}

static bool isSendOrRecv(Operation *op) {
  return isa<SendOp, RecvOp, SendStartOp, RecvStartOp>(op);
}

FailureOr<int64_t> mlir::rtx::verifyMeshAxes(Operation *op,
                                             FlatSymbolRefAttr meshRef,
                                             ArrayAttr axes,
                                             SymbolTableCollection &symbols) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError() << "refers to unknown mesh " << meshRef;
  if (axes.empty())
    return op->emitOpError() << "needs at least one mesh axis";

  // The group: ranks that differ only in the coordinates of `axes`.
  int64_t groupSize = 1;
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute attr : axes) {
    StringRef axis = cast<StringAttr>(attr).getValue();
    std::optional<int64_t> size = mesh.getAxisSize(axis);
    if (!size)
      return op->emitOpError() << "uses axis \"" << axis << "\" which mesh "
                               << meshRef << " does not have";
    if (!seen.insert(axis).second)
      return op->emitOpError() << "lists axis \"" << axis << "\" twice";
    groupSize *= *size;
  }
  return groupSize;
}

LogicalResult mlir::rtx::verifyCollective(Operation *op,
                                          SymbolTableCollection &symbols) {
  auto axes = op->getAttrOfType<ArrayAttr>("axes");
  FailureOr<int64_t> group = verifyMeshAxes(
      op, op->getAttrOfType<FlatSymbolRefAttr>("mesh"), axes, symbols);
  if (failed(group))
    return failure();
  int64_t groupSize = *group;

  RankedTensorType produced = getProducedType(op);
  if (op->getNumResults() == 1 && isa<TokenType>(op->getResult(0).getType()) &&
      !isa<SendStartOp>(op) && !produced)
    return op->emitOpError() << "token must carry the tensor type the "
                                "collective produces";
  if (isa<SendStartOp>(op) &&
      cast<TokenType>(op->getResult(0).getType()).getValueType())
    return op->emitOpError() << "a send's token carries no value";

  if (isSendOrRecv(op)) {
    int64_t peer = static_cast<int64_t>(
        op->getAttrOfType<IntegerAttr>("peer").getValue().getSExtValue());
    if (peer < 0 || peer >= groupSize)
      return op->emitOpError() << "peer " << peer << " is outside the group of "
                               << groupSize << " ranks over " << axes;
    return success();
  }

  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  if (input.getElementType() != produced.getElementType())
    return op->emitOpError() << "result element type "
                             << produced.getElementType()
                             << " differs from the input's "
                             << input.getElementType();

  ArrayRef<int64_t> in = input.getShape();
  SmallVector<int64_t> expected(in);
  auto getDimAttr = [&](StringRef name) -> int64_t {
    return op->getAttrOfType<IntegerAttr>(name).getValue().getSExtValue();
  };
  auto checkDim = [&](int64_t dim, StringRef name) -> LogicalResult {
    if (dim < 0 || dim >= static_cast<int64_t>(in.size()))
      return op->emitOpError() << name << " " << dim
                               << " is out of range for a tensor of rank "
                               << in.size();
    return success();
  };
  auto checkDivisible = [&](int64_t dim, StringRef name) -> LogicalResult {
    if (in[dim] % groupSize != 0)
      return op->emitOpError()
             << name << " " << dim << " of size " << in[dim]
             << " is not divisible by the group size " << groupSize
             << " over " << axes;
    return success();
  };

  if (isa<MeshSliceOp>(op)) {
    int64_t dim = getDimAttr("dim");
    if (failed(checkDim(dim, "dim")) || failed(checkDivisible(dim, "dim")))
      return failure();
    expected[dim] /= groupSize;
  } else if (isa<AllGatherOp, AllGatherStartOp>(op)) {
    int64_t dim = getDimAttr("gather_dim");
    if (failed(checkDim(dim, "gather dim")))
      return failure();
    expected[dim] *= groupSize;
  } else if (isa<ReduceScatterOp, ReduceScatterStartOp>(op)) {
    int64_t dim = getDimAttr("scatter_dim");
    if (failed(checkDim(dim, "scatter dim")) ||
        failed(checkDivisible(dim, "scatter dim")))
      return failure();
    expected[dim] /= groupSize;
  } else if (isa<AllToAllOp, AllToAllStartOp>(op)) {
    int64_t split = getDimAttr("split_dim"), concat = getDimAttr("concat_dim");
    if (failed(checkDim(split, "split dim")) ||
        failed(checkDim(concat, "concat dim")) ||
        failed(checkDivisible(split, "split dim")))
      return failure();
    expected[split] /= groupSize;
    expected[concat] *= groupSize;
  } else if (isa<BroadcastFromOp, BroadcastFromStartOp>(op)) {
    int64_t root = getDimAttr("root");
    if (root < 0 || root >= groupSize)
      return op->emitOpError() << "root " << root << " is outside the group of "
                               << groupSize << " ranks over " << axes;
  } else if (isa<PermuteOp, PermuteStartOp>(op)) {
    ArrayRef<int64_t> pairs =
        op->getAttrOfType<DenseI64ArrayAttr>("pairs").asArrayRef();
    if (pairs.size() % 2 != 0)
      return op->emitOpError() << "pairs must hold source/target pairs";
    llvm::SmallDenseSet<int64_t> sources, targets;
    for (size_t i = 0; i < pairs.size(); i += 2) {
      for (int64_t rank : {pairs[i], pairs[i + 1]})
        if (rank < 0 || rank >= groupSize)
          return op->emitOpError()
                 << "pair " << pairs[i] << " -> " << pairs[i + 1]
                 << " names a rank outside the group of " << groupSize
                 << " ranks over " << axes;
      if (!sources.insert(pairs[i]).second)
        return op->emitOpError() << "source " << pairs[i] << " appears twice";
      if (!targets.insert(pairs[i + 1]).second)
        return op->emitOpError()
               << "target " << pairs[i + 1] << " appears twice";
    }
  }

  if (produced.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError() << "result shape " << formatShape(produced.getShape())
                             << " does not match " << formatShape(expected)
                             << ", the shape it produces from input "
                             << formatShape(in) << " over " << axes << " ("
                             << groupSize << " ranks)";
  return success();
}

// The point-to-point ops are not generated by the collective multiclass, so
// they forward to the shared verifier here.
LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyCollective(*this, symbols);
}
LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyCollective(*this, symbols);
}
LogicalResult SendStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyCollective(*this, symbols);
}
LogicalResult RecvStartOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyCollective(*this, symbols);
}
LogicalResult MeshSliceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyCollective(*this, symbols);
}

// The vocab-parallel ops name the mesh axes their vocabulary is split over.
LogicalResult
VocabLogitStatsOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyMeshAxes(*this, getMeshAttr(), getAxes(), symbols);
}
LogicalResult
VocabCrossEntropyGradOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyMeshAxes(*this, getMeshAttr(), getAxes(), symbols);
}
LogicalResult EmbeddingOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (!getVocabMeshAttr())
    return success();
  return verifyMeshAxes(*this, getVocabMeshAttr(), getVocabAxesAttr(), symbols);
}
LogicalResult
EmbeddingGradOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (!getVocabMeshAttr())
    return success();
  return verifyMeshAxes(*this, getVocabMeshAttr(), getVocabAxesAttr(), symbols);
}
