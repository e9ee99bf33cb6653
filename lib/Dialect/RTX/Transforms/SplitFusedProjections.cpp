//===- SplitFusedProjections.cpp - the rtx-split-fused-projections pass ---===//
//
// Splits a projection whose output features are the side-by-side parts of
// several tensors (GPT-2's fused q | k | v) into one projection per part,
// over parameters that are blocks of the user's one. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXSPLITFUSEDPROJECTIONS
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// Where the parts lie in a value: along dimension `dim`, in `parts` equal
/// consecutive blocks.
struct PartsDim {
  int64_t dim;
  int64_t parts;
};

/// A fused projection and the ops between it and the split of its parts:
/// `contraction` (a linear or matmul over parameter `weight`, optionally
/// with parameter `bias`), then `chain` (reshapes, transposes and bias
/// additions), each with where the parts lie in its result.
struct FusedProjection {
  Operation *contraction = nullptr;
  ParamOp weight;
  int64_t weightDim = 0; // the dimension of the weight holding the features
  SmallVector<ParamOp> biases;  // the linear's bias and any added bias
  SmallVector<Operation *> ops; // contraction, then the chain, in order
  SmallVector<PartsDim> where;  // per op: the parts in its result
  SplitOp split;
};

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// The dimension of a reshape's result that holds the parts the input
/// holds along `in`: the one whose block of elements (it and everything
/// inside it) is the input's, and which the parts still divide.
std::optional<PartsDim> throughReshape(ArrayRef<int64_t> from,
                                       ArrayRef<int64_t> to, PartsDim in) {
  int64_t row = product(from.drop_front(in.dim));
  for (size_t d = 0; d < to.size(); ++d)
    if (product(to.drop_front(d)) == row && to[d] % in.parts == 0)
      return PartsDim{static_cast<int64_t>(d), in.parts};
  return std::nullopt;
}

/// A parameter used by `user` alone (a tied or shared one is not split).
ParamOp ownParam(Value v, Operation *user) {
  auto param = v.getDefiningOp<ParamOp>();
  if (!param || !param->hasOneUse() || *param->getUsers().begin() != user)
    return {};
  return param;
}

/// Walks up from `fused.split` through single-use reshapes, transposes and
/// bias additions to the contraction, filling `fused` but for `where`.
bool findContraction(FusedProjection &fused) {
  SmallVector<Operation *> chain;
  Value v = fused.split.getInput();
  while (!fused.contraction) {
    Operation *def = v.getDefiningOp();
    if (!def || !v.hasOneUse())
      return false;
    chain.push_back(def);
    if (auto linear = dyn_cast<LinearOp>(def)) {
      fused.contraction = def;
      fused.weight = ownParam(linear.getWeight(), def);
      fused.weightDim = 0;
      if (linear.getBias()) {
        ParamOp bias = ownParam(linear.getBias(), def);
        if (!bias)
          return false;
        fused.biases.push_back(bias);
      }
    } else if (auto matmul = dyn_cast<MatmulOp>(def)) {
      if (matmul.getTransposeLhs())
        return false;
      fused.contraction = def;
      fused.weight = ownParam(matmul.getRhs(), def);
      fused.weightDim = matmul.getTransposeRhs() ? 0 : 1;
    } else if (auto add = dyn_cast<AddOp>(def)) {
      // out + broadcast(bias): the bias is split with the features.
      auto broadcast = add.getRhs().getDefiningOp<BroadcastOp>();
      if (!broadcast || !broadcast->hasOneUse())
        return false;
      ParamOp bias = ownParam(broadcast.getInput(), broadcast);
      if (!bias || bias.getType().getRank() != 1)
        return false;
      fused.biases.push_back(bias);
      v = add.getLhs();
    } else if (isa<ReshapeOp, TransposeOp>(def)) {
      v = def->getOperand(0);
    } else {
      return false;
    }
  }
  std::reverse(chain.begin(), chain.end());
  fused.ops = chain;
  return static_cast<bool>(fused.weight);
}

/// Follows the parts down from the contraction's features through the
/// chain into `fused.where`; false when they do not stay consecutive
/// blocks of one dimension, or the split is not along it.
bool followParts(FusedProjection &fused) {
  int64_t parts = fused.split.getNumResults();
  auto features =
      cast<RankedTensorType>(fused.contraction->getResultTypes()[0]);
  PartsDim where{features.getRank() - 1, parts};
  if (features.getShape().back() % parts != 0)
    return false;
  for (Operation *op : fused.ops) {
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      auto next = throughReshape(reshape.getInput().getType().getShape(),
                                 reshape.getType().getShape(), where);
      if (!next)
        return false;
      where = *next;
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      ArrayRef<int64_t> perm = transpose.getPermutation();
      where.dim = std::find(perm.begin(), perm.end(), where.dim) - perm.begin();
    } else if (auto add = dyn_cast<AddOp>(op)) {
      // The bias covers the features exactly: the parts must still be there.
      auto broadcast = add.getRhs().getDefiningOp<BroadcastOp>();
      if (broadcast.getDims().back() != where.dim ||
          add.getType().getDimSize(where.dim) != features.getShape().back())
        return false;
    }
    fused.where.push_back(where);
  }
  SplitOp split = fused.split;
  if (static_cast<int64_t>(split.getDim()) != where.dim)
    return false;
  int64_t size = split.getInput().getType().getDimSize(where.dim) / parts;
  return llvm::all_of(split.getResults(), [&](Value result) {
    return cast<RankedTensorType>(result.getType()).getDimSize(where.dim) ==
           size;
  });
}

/// The fused projection whose parts `split` separates, if it is one.
std::optional<FusedProjection> matchFused(SplitOp split) {
  if (split.getNumResults() < 2)
    return std::nullopt;
  FusedProjection fused;
  fused.split = split;
  if (!findContraction(fused) || !followParts(fused))
    return std::nullopt;
  return fused;
}

/// `type` with dimension `dim` divided by `parts`.
RankedTensorType partType(Type type, PartsDim where) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[where.dim] /= where.parts;
  return ranked.clone(shape);
}

/// Parameter `param`'s part `index` of `parts` along `dim`, named
/// `NAME@index`, with `rtx.part_of` saying which block of NAME it is.
ParamOp partParam(OpBuilder &b, ParamOp param, int64_t dim, int64_t index,
                  int64_t parts) {
  RankedTensorType type = partType(param.getType(), {dim, parts});
  std::string name = (param.getName() + "@" + Twine(index)).str();
  auto part = ParamOp::create(b, param.getLoc(), type, name, param.getInit(),
                              param.getSeedAttr());
  int64_t size = type.getDimSize(dim);
  part->setAttr(RTXDialect::getPartOfAttrName(),
                b.getDictionaryAttr({
                    b.getNamedAttr("name", param.getNameAttr()),
                    b.getNamedAttr("dim", b.getI64IntegerAttr(dim)),
                    b.getNamedAttr("offset", b.getI64IntegerAttr(index * size)),
                    b.getNamedAttr("size", b.getI64IntegerAttr(size * parts)),
                }));
  return part;
}

/// Rewrites the fused projection into one per part and erases it.
void splitFused(FusedProjection &fused) {
  OpBuilder b(fused.split);
  int64_t parts = fused.split.getNumResults();
  for (int64_t i = 0; i < parts; ++i) {
    // The parts where the user's parameter was: parameters (and the state
    // that follows them) keep their order.
    IRMapping map;
    b.setInsertionPoint(fused.weight);
    map.map(fused.weight.getResult(),
            partParam(b, fused.weight, fused.weightDim, i, parts).getResult());
    for (ParamOp bias : fused.biases) {
      b.setInsertionPoint(bias);
      map.map(bias.getResult(), partParam(b, bias, 0, i, parts).getResult());
    }
    b.setInsertionPoint(fused.split);
    for (auto [op, where] : llvm::zip(fused.ops, fused.where)) {
      if (auto add = dyn_cast<AddOp>(op)) {
        // Its bias's broadcast, to the part's shape.
        Operation *broadcast = add.getRhs().getDefiningOp();
        Operation *copy = b.clone(*broadcast, map);
        copy->getResult(0).setType(partType(add.getType(), where));
      }
      Operation *copy = b.clone(*op, map);
      copy->getResult(0).setType(partType(op->getResultTypes()[0], where));
    }
    fused.split.getResult(i).replaceAllUsesWith(
        map.lookup(fused.split.getInput()));
  }
  fused.split.erase();
  for (Operation *op : llvm::reverse(fused.ops)) {
    SmallVector<Operation *> feeding;
    if (auto add = dyn_cast<AddOp>(op))
      feeding.push_back(add.getRhs().getDefiningOp());
    op->erase();
    for (Operation *f : feeding)
      f->erase();
  }
  fused.weight.erase();
  for (ParamOp bias : fused.biases)
    bias.erase();
}

struct RTXSplitFusedProjectionsPass
    : mlir::rtx::impl::RTXSplitFusedProjectionsBase<
          RTXSplitFusedProjectionsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp f) {
      SmallVector<SplitOp> splits(f.getOps<SplitOp>());
      for (SplitOp split : splits)
        if (auto fused = matchFused(split))
          splitFused(*fused);
    });
  }
};
} // namespace
