//===- PadVocabulary.cpp - the rtx-pad-vocabulary pass --------------------===//
//
// Pads a language model's vocabulary to a multiple of the tp axis where it
// is used, masking the padded classes out of the loss. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "LanguageModelHead.h"
#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPADVOCABULARY
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// Pads every LM head of `f` whose vocabulary `size` does not divide.
void padVocabulary(func::FuncOp f, StringRef axis, int64_t size,
                   StringRef meshName) {
  for (auto loss : llvm::to_vector(f.getOps<CrossEntropyOp>())) {
    Value logits = loss.getLogits();
    SmallVector<ReshapeOp> reshapes;
    LinearOp head = languageModelHead(loss, &reshapes, /*onlyUse=*/true);
    auto logitsType = cast<RankedTensorType>(logits.getType());
    int64_t vocab = logitsType.getShape().back();
    if (vocab % size == 0 || !head ||
        !head.getWeight().getDefiningOp<ParamOp>() ||
        (head.getBias() && !head.getBias().getDefiningOp<ParamOp>()))
      continue;
    int64_t padded = llvm::divideCeil(vocab, size) * size;
    MLIRContext *ctx = f.getContext();
    OpBuilder b(ctx);
    llvm::DenseMap<Value, Value> paddedOf;
    // `param` with zero rows appended, split over `axis` along them.
    auto pad = [&](Value param) -> Value {
      if (Value done = paddedOf.lookup(param))
        return done;
      auto type = cast<RankedTensorType>(param.getType());
      SmallVector<int64_t> zerosShape(type.getShape()), paddedShape(zerosShape);
      zerosShape[0] = padded - vocab;
      paddedShape[0] = padded;
      b.setInsertionPointAfter(param.getDefiningOp());
      auto zerosType = type.clone(zerosShape);
      Value zeros = ConstantOp::create(
          b, param.getLoc(),
          DenseElementsAttr::get(zerosType,
                                 b.getZeroAttr(type.getElementType())));
      auto concat = ConcatOp::create(b, param.getLoc(), type.clone(paddedShape),
                                     ValueRange{param, zeros}, 0);
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      dims[0].push_back(axis);
      concat->setAttr(RTXDialect::getShardingAttrName(),
                      ShardingAttr::get(ctx, meshName, dims));
      return paddedOf[param] = concat;
    };
    head.getWeightMutable().assign(pad(head.getWeight()));
    if (head.getBias())
      head.getBiasMutable().assign(pad(head.getBias()));
    // The token embedding tied to the head (GPT-2) reads the padded table.
    for (auto embedding : f.getOps<EmbeddingOp>())
      if (paddedOf.count(embedding.getTable()))
        embedding.getTableMutable().assign(pad(embedding.getTable()));
    // The head and the reshapes after it make `padded` classes.
    auto widen = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.back() = padded;
      v.setType(type.clone(shape));
    };
    widen(head.getResult());
    for (ReshapeOp reshape : reshapes)
      widen(reshape.getResult());
    auto paddedType = cast<RankedTensorType>(logits.getType());
    // -inf in the padded classes: exp(-inf - max) = 0.
    b.setInsertionPoint(loss);
    SmallVector<bool> isPadding(padded, false);
    std::fill(isPadding.begin() + vocab, isPadding.end(), true);
    auto maskType = RankedTensorType::get({padded}, b.getI1Type());
    Value mask = ConstantOp::create(
        b, loss.getLoc(),
        DenseElementsAttr::get(maskType, ArrayRef<bool>(isPadding)));
    mask = BroadcastOp::create(
        b, loss.getLoc(), paddedType.clone(b.getI1Type()), mask,
        b.getDenseI64ArrayAttr({paddedType.getRank() - 1}));
    Value masked = MaskedFillOp::create(
        b, loss.getLoc(), paddedType, logits, mask,
        b.getF64FloatAttr(-std::numeric_limits<double>::infinity()));
    loss.getLogitsMutable().assign(masked);
    mlir::emitWarning(loss.getLoc()) << "vocabulary of " << vocab << " classes padded to "
                       << padded << " for axis \"" << axis << "\" of size "
                       << size
                       << ": the padded classes are masked out of the loss";
  }
}

struct RTXPadVocabularyPass
    : mlir::rtx::impl::RTXPadVocabularyBase<RTXPadVocabularyPass> {
  using RTXPadVocabularyBase::RTXPadVocabularyBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-pad-vocabulary");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    int64_t size = mesh.size(axis);
    if (size <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        padVocabulary(f, axis, size, mesh.name());
  }
};
} // namespace
