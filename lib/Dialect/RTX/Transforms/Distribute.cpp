//===- Distribute.cpp - the rtx-distribute pipeline -----------------------===//
//
// Forward model -> partitioned, verified train step, with default Megatron
// seeding. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXDISTRIBUTE
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct MeshSpec {
  SmallVector<std::string> names;
  SmallVector<int64_t> sizes;
  int64_t size(StringRef axis) const {
    for (auto [n, s] : llvm::zip(names, sizes))
      if (n == axis)
        return s;
    return 1;
  }
};

/// Which dimension of a parameter tp splits, by the parameter's name.
std::optional<int64_t> tensorParallelDim(StringRef name) {
  static const char *column[] = {"c_attn", "c_fc", "wq", "wk", "wv",
                                 "w1",     "w3",   "fc1", "qkv"};
  static const char *row[] = {"c_proj", "wo", "w2", "fc2", "proj"};
  for (const char *layer : column)
    if (name.ends_with((Twine(".") + layer + ".weight").str()) ||
        name.ends_with((Twine(".") + layer + ".bias").str()) ||
        name == (Twine(layer) + ".weight").str() ||
        name == (Twine(layer) + ".bias").str())
      return 0;
  for (const char *layer : row)
    if (name.ends_with((Twine(".") + layer + ".weight").str()) ||
        name == (Twine(layer) + ".weight").str())
      return 1;
  return std::nullopt;
}

/// The names of the parameters that hold a language model's vocabulary:
/// the tables of embeddings whose vocabulary is a cross-entropy's, and the
/// weight and bias of the linear layer producing that cross-entropy's logits
/// (tied to the embedding in GPT-2).
llvm::StringSet<> vocabularyParams(func::FuncOp f) {
  llvm::StringSet<> names;
  auto add = [&](Value v) {
    auto arg = dyn_cast_or_null<BlockArgument>(v);
    if (!arg)
      return;
    if (auto name =
            f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "rtx.param"))
      names.insert(name.getValue());
  };
  llvm::SmallDenseSet<int64_t> vocabularies;
  for (auto loss : f.getOps<CrossEntropyOp>()) {
    vocabularies.insert(loss.getLogits().getType().getShape().back());
    if (auto head = loss.getLogits().getDefiningOp<LinearOp>()) {
      add(head.getWeight());
      add(head.getBias());
    }
  }
  for (auto embedding : f.getOps<EmbeddingOp>())
    if (vocabularies.contains(embedding.getTable().getType().getDimSize(0)))
      add(embedding.getTable());
  return names;
}

/// Megatron pads a vocabulary that tp does not divide to a multiple of tp.
/// rtx pads where the vocabulary is used, so parameters (and checkpoints,
/// and the single-device program) keep their shapes: the embedding table
/// and the LM head's weight and bias get zero rows appended (a concatenation
/// whose result is split over tp), and the padded logits are filled with
/// -inf before the loss, so padded classes take no share of the softmax,
/// never win its maximum and get no gradient: the loss and every gradient
/// are those of the unpadded model. The parameters themselves stay
/// replicated; their gradient is gathered once per step to drop the padding.
void padVocabulary(func::FuncOp f, int64_t tp, StringRef meshName) {
  for (auto loss : llvm::to_vector(f.getOps<CrossEntropyOp>())) {
    Value logits = loss.getLogits();
    auto head = logits.getDefiningOp<LinearOp>();
    auto logitsType = cast<RankedTensorType>(logits.getType());
    int64_t vocab = logitsType.getShape().back();
    if (vocab % tp == 0 || !head || !logits.hasOneUse() ||
        !head.getWeight().getDefiningOp<ParamOp>() ||
        (head.getBias() && !head.getBias().getDefiningOp<ParamOp>()))
      continue;
    int64_t padded = llvm::divideCeil(vocab, tp) * tp;
    MLIRContext *ctx = f.getContext();
    OpBuilder b(ctx);
    llvm::DenseMap<Value, Value> paddedOf;
    // `param` with zero rows appended, split over tp along them.
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
      dims[0].push_back("tp");
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
    SmallVector<int64_t> shape(logitsType.getShape());
    shape.back() = padded;
    auto paddedType = logitsType.clone(shape);
    head.getResult().setType(paddedType);
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
    loss.emitWarning() << "vocabulary of " << vocab
                       << " classes padded to " << padded
                       << " for axis \"tp\" of size " << tp
                       << ": the padded classes are masked out of the loss";
  }
}

struct RTXDistributePass
    : mlir::rtx::impl::RTXDistributeBase<RTXDistributePass> {
  using RTXDistributeBase::RTXDistributeBase;

  FailureOr<MeshSpec> parseMesh(ModuleOp module) {
    MeshSpec spec;
    SmallVector<StringRef> parts;
    StringRef(mesh).split(parts, ',', -1, false);
    for (StringRef part : parts) {
      auto [name, size] = part.trim().split(':');
      int64_t value;
      if (name.empty() || size.getAsInteger(10, value) || value < 1)
        return mlir::emitError(module.getLoc())
               << "rtx-distribute: bad mesh axis '" << part
               << "'; expected name:size, e.g. mesh=dp:2,tp:2";
      if (llvm::is_contained(spec.names, name.str()))
        return mlir::emitError(module.getLoc())
               << "rtx-distribute: mesh axis '" << name << "' given twice";
      if (name != "dp" && name != "tp" && name != "sp")
        return mlir::emitError(module.getLoc()) << "rtx-distribute: unknown mesh axis '"
                                  << name << "'; expected dp, tp or sp";
      spec.names.push_back(name.str());
      spec.sizes.push_back(value);
    }
    return spec;
  }

  /// Sets `attr` as the sharding of argument `index` unless one is there.
  static void seedArg(func::FuncOp f, unsigned index, ShardingAttr attr) {
    if (!f.getArgAttr(index, RTXDialect::getShardingAttrName()))
      f.setArgAttr(index, RTXDialect::getShardingAttrName(), attr);
  }

  void seed(func::FuncOp f, const MeshSpec &spec, StringRef meshName) {
    MLIRContext *ctx = f.getContext();
    auto sharded = [&](RankedTensorType type, int64_t dim, StringRef axis) {
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      dims[dim].push_back(axis);
      return ShardingAttr::get(ctx, meshName, dims);
    };
    // Which dimension tp splits, per parameter name (for its state too).
    llvm::StringMap<int64_t> tpDim;
    llvm::StringSet<> vocabulary;
    if (vocabParallel)
      vocabulary = vocabularyParams(f);
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
      auto name = f.getArgAttrOfType<StringAttr>(i, "rtx.param");
      if (!name || spec.size("tp") == 1)
        continue;
      std::optional<int64_t> dim = vocabulary.contains(name.getValue())
                                       ? 0
                                       : tensorParallelDim(name.getValue());
      if (!dim || *dim >= type.getRank())
        continue;
      if (type.getDimSize(*dim) % spec.size("tp") != 0) {
        f.emitWarning() << "parameter \"" << name.getValue()
                        << "\" stays replicated: dimension " << *dim
                        << " of size " << type.getDimSize(*dim)
                        << " is not divisible by axis \"tp\" of size "
                        << spec.size("tp");
        continue;
      }
      tpDim[name.getValue()] = *dim;
    }
    warnGatheredFusedProjections(f, tpDim);
    // Data arguments are numbered among themselves (argN in rtx-run).
    unsigned dataIndex = 0;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
      auto state = f.getArgAttrOfType<StringAttr>(i, "rtx.state");
      if (state) {
        // "param:NAME", "exp_avg:NAME", "exp_avg_sq:NAME", "step".
        auto [kind, name] = state.getValue().split(':');
        if (auto it = tpDim.find(name); it != tpDim.end())
          seedArg(f, i, sharded(type, it->second, "tp"));
        continue;
      }
      unsigned data = dataIndex++;
      if (spec.size("dp") > 1 && type.getRank() > 0) {
        if (type.getDimSize(0) % spec.size("dp") != 0) {
          f.emitWarning() << "data argument " << data
                          << " stays replicated: dimension 0 of size "
                          << type.getDimSize(0)
                          << " is not divisible by axis \"dp\" of size "
                          << spec.size("dp");
          continue;
        }
        seedArg(f, i, sharded(type, 0, "dp"));
      }
    }
    // Megatron sequence parallelism: outside the tensor-parallel regions the
    // activations are split along the sequence over tp. Seeding the data
    // inputs' sequence dimension over tp lets propagation carry that split
    // through embeddings, norms, dropout and residuals; the partitioner then
    // all-gathers the sequence before each column-parallel projection and
    // reduce-scatters the row-parallel partial sums back into it.
    if (sequenceParallel)
      seedSequence(f, spec.size("tp"), "tp", meshName);
    // Sequence parallelism (sp): data inputs split along the sequence
    // (dimension 1); attention runs on whole sequences for a subset of heads,
    // so the partitioner exchanges sequence for heads with all-to-alls
    // (DeepSpeed-Ulysses).
    if (spec.size("sp") > 1) {
      int64_t sp = spec.size("sp");
      for (unsigned i = 0; i < f.getNumArguments(); ++i) {
        auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
        if (f.getArgAttrOfType<StringAttr>(i, "rtx.state") ||
            type.getRank() < 2 || type.getDimSize(1) % sp != 0)
          continue;
        auto attr = f.getArgAttrOfType<ShardingAttr>(
            i, RTXDialect::getShardingAttrName());
        Layout layout = attr ? Layout::fromAttr(attr)
                             : Layout::replicated(type.getRank());
        if (layout.dims[1].empty() && !layout.uses("sp")) {
          layout.dims[1].push_back("sp");
          f.setArgAttr(i, RTXDialect::getShardingAttrName(),
                       layout.toAttr(ctx, meshName));
        }
      }
      for (auto input : f.getOps<InputOp>()) {
        auto type = input.getType();
        if (type.getRank() < 2 || type.getDimSize(1) % sp != 0)
          continue;
        auto attr = input->getAttrOfType<ShardingAttr>(
            RTXDialect::getShardingAttrName());
        Layout layout = attr ? Layout::fromAttr(attr)
                             : Layout::replicated(type.getRank());
        if (layout.dims[1].empty() && !layout.uses("sp")) {
          layout.dims[1].push_back("sp");
          input->setAttr(RTXDialect::getShardingAttrName(),
                         layout.toAttr(ctx, meshName));
        }
      }
      SmallVector<Operation *> attentions;
      for (Operation &op : f.getBody().front())
        if (isa<AttentionOp, AttentionGradOp>(op))
          attentions.push_back(&op);
      for (Operation *attention : attentions) {
        auto key = cast<RankedTensorType>(attention->getOperand(1).getType());
        SmallVector<StringRef> heads;
        if (spec.size("tp") > 1)
          heads.push_back("tp");
        heads.push_back("sp");
        int64_t split = spec.size("tp") * sp;
        if (key.getDimSize(1) % split != 0) {
          attention->emitWarning()
              << "attention keeps whole heads: its " << key.getDimSize(1)
              << " key/value heads are not divisible by " << split
              << "; the sequence is gathered instead";
          continue;
        }
        SmallVector<SmallVector<StringRef>> dims(4);
        dims[1] = heads;
        auto sharding = ShardingAttr::get(ctx, meshName, dims);
        if (attention->getNumResults() == 1) {
          attention->setAttr(RTXDialect::getShardingAttrName(), sharding);
        } else {
          SmallVector<Attribute> all(attention->getNumResults(), sharding);
          attention->setAttr(RTXDialect::getShardingAttrName(),
                             ArrayAttr::get(ctx, all));
        }
      }
    }
    if (spec.size("dp") > 1)
      for (auto input : f.getOps<InputOp>()) {
        auto type = input.getType();
        if (type.getRank() == 0 ||
            input->hasAttr(RTXDialect::getShardingAttrName()))
          continue;
        if (type.getDimSize(0) % spec.size("dp") != 0) {
          input.emitWarning() << "input \"" << input.getName()
                              << "\" stays replicated: dimension 0 of size "
                              << type.getDimSize(0)
                              << " is not divisible by axis \"dp\" of size "
                              << spec.size("dp");
          continue;
        }
        input->setAttr(RTXDialect::getShardingAttrName(),
                       sharded(type, 0, "dp"));
      }
  }

  /// A column-parallel projection whose output features are split into
  /// parts (GPT-2's fused q | k | v) splits each rank's block across the
  /// parts, so the partitioner gathers it before the split: say so, since
  /// ordering the features by head (Megatron's layout) avoids it.
  static void warnGatheredFusedProjections(func::FuncOp f,
                                           const llvm::StringMap<int64_t> &tpDim) {
    for (auto linear : f.getOps<LinearOp>()) {
      auto weight = dyn_cast<BlockArgument>(linear.getWeight());
      if (!weight)
        continue;
      auto name =
          f.getArgAttrOfType<StringAttr>(weight.getArgNumber(), "rtx.param");
      auto it = name ? tpDim.find(name.getValue()) : tpDim.end();
      if (it == tpDim.end() || it->second != 0)
        continue;
      int64_t features = linear.getType().getRank() - 1;
      for (Operation *user : linear->getUsers())
        if (auto split = dyn_cast<SplitOp>(user);
            split && static_cast<int64_t>(split.getDim()) == features &&
            split.getNumResults() > 1)
          split.emitWarning()
              << "the output of \"" << name.getValue() << "\" is split into "
              << split.getNumResults()
              << " parts along the features tp splits: tp gathers it first "
                 "(order the features by head, Megatron's layout, for "
                 "head-parallel attention)";
    }
  }

  /// Splits dimension 1 (the sequence) of every data input over `axis`.
  static void seedSequence(func::FuncOp f, int64_t size, StringRef axis,
                           StringRef meshName) {
    MLIRContext *ctx = f.getContext();
    auto seedLayout = [&](RankedTensorType type, ShardingAttr attr)
        -> std::optional<ShardingAttr> {
      if (type.getRank() < 2 || type.getDimSize(1) % size != 0)
        return std::nullopt;
      Layout layout =
          attr ? Layout::fromAttr(attr) : Layout::replicated(type.getRank());
      if (!layout.dims[1].empty() || layout.uses(axis))
        return std::nullopt;
      layout.dims[1].push_back(axis.str());
      return layout.toAttr(ctx, meshName);
    };
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      if (f.getArgAttrOfType<StringAttr>(i, "rtx.state"))
        continue;
      if (auto attr = seedLayout(
              cast<RankedTensorType>(f.getArgumentTypes()[i]),
              f.getArgAttrOfType<ShardingAttr>(
                  i, RTXDialect::getShardingAttrName())))
        f.setArgAttr(i, RTXDialect::getShardingAttrName(), *attr);
    }
    for (auto input : f.getOps<InputOp>())
      if (auto attr = seedLayout(input.getType(),
                                 input->getAttrOfType<ShardingAttr>(
                                     RTXDialect::getShardingAttrName())))
        input->setAttr(RTXDialect::getShardingAttrName(), *attr);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshSpec> spec = parseMesh(module);
    if (failed(spec))
      return signalPassFailure();
    if (sequenceParallel && spec->size("tp") == 1) {
      mlir::emitError(module.getLoc())
          << "rtx-distribute: sequence-parallel=true needs a tp axis larger "
             "than 1 (Megatron sequence parallelism splits the sequence over tp)";
      return signalPassFailure();
    }
    if (sequenceParallel && spec->size("sp") > 1) {
      mlir::emitError(module.getLoc())
          << "rtx-distribute: sequence-parallel=true (over tp) and an sp axis "
             "cannot be combined";
      return signalPassFailure();
    }
    if (!module.getOps<MeshOp>().empty()) {
      mlir::emitError(module.getLoc()) << "rtx-distribute adds the mesh itself; the module "
                            "already has one";
      return signalPassFailure();
    }
    std::string meshName = "mesh";
    for (auto [n, s] : llvm::zip(spec->names, spec->sizes))
      meshName += "_" + n + std::to_string(s);
    OpBuilder b(module.getBodyRegion());
    SmallVector<StringRef> names(spec->names.begin(), spec->names.end());
    MeshOp::create(b, module.getLoc(), meshName, b.getStrArrayAttr(names),
                   b.getDenseI64ArrayAttr(spec->sizes));

    if (vocabParallel && spec->size("tp") > 1)
      for (auto f : module.getOps<func::FuncOp>())
        if (!f.isExternal())
          padVocabulary(f, spec->size("tp"), meshName);

    OpPassManager training(ModuleOp::getOperationName());
    training.addNestedPass<func::FuncOp>(createRTXAutodiff());
    if (microBatches > 1)
      training.addNestedPass<func::FuncOp>(createRTXAccumulateGradients(
          RTXAccumulateGradientsOptions{microBatches}));
    RTXOptimizerOptions optimizerOptions;
    optimizerOptions.kind = optimizer;
    optimizerOptions.lr = lr;
    optimizerOptions.beta1 = beta1;
    optimizerOptions.beta2 = beta2;
    optimizerOptions.eps = eps;
    optimizerOptions.weightDecay = weightDecay;
    optimizerOptions.clipNorm = clipNorm;
    training.addPass(createRTXOptimizer(optimizerOptions));
    if (failed(runPipeline(training, module)))
      return signalPassFailure();

    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        seed(f, *spec, meshName);

    OpPassManager distribution(ModuleOp::getOperationName());
    distribution.addPass(createRTXPropagateSharding());
    distribution.addPass(createRTXPartition());
    distribution.addPass(createRTXVerifyDistribution());
    if (bucketBytes >= 0)
      distribution.addNestedPass<func::FuncOp>(
          createRTXBucketCollectives(RTXBucketCollectivesOptions{bucketBytes}));
    if (overlap)
      distribution.addNestedPass<func::FuncOp>(createRTXScheduleOverlap());
    if (failed(runPipeline(distribution, module)))
      return signalPassFailure();
  }
};
} // namespace
