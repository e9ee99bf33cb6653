//===- SeedShardings.cpp - the rtx-seed-shardings pass --------------------===//
//
// Megatron-style sharding seeds found from the graph's structure: column-
// and row-parallel pairs of linear layers, the vocabulary of a language
// model, the batch and the sequence of data inputs. Parameter names are only
// optional hints. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "LanguageModelHead.h"
#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXSEEDSHARDINGS
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

// Diagnostics are emitted at locations (mlir::emitWarning(loc)), not on ops:
// op->emitWarning() attaches the op, which is printed with the numbering of
// its whole function, so one warning per layer (a fused projection, a
// dimension tp does not divide) made rtx-distribute quadratic in depth.

namespace {
/// The two halves of a Megatron pair: column-parallel splits a layer's
/// output features, row-parallel its input features.
enum class Role { Column, Row };

struct Hint {
  std::string suffix;
  Role role;
  bool used = false;
};

/// A linear layer (or a matmul) over a parameter: `y = x W^T (+ b)` or
/// `y = x op(W)`, with the dimensions of W that hold its output and input
/// features.
struct Contraction {
  Value input;
  StringAttr weight;
  StringAttr bias; // null without a parameter bias
  int64_t outDim, inDim;
};

class Seeder {
public:
  Seeder(func::FuncOp f, const MeshAxes &mesh, bool vocabParallel,
         bool sequenceParallel, MutableArrayRef<Hint> hints)
      : f(f), ctx(f.getContext()), mesh(mesh), vocabParallel(vocabParallel),
        sequenceParallel(sequenceParallel), hints(hints) {}

  /// Seeds `f`; fails (after saying why) when `strict` finds a weight
  /// that stays whole on tp.
  LogicalResult run(bool strict);

private:
  LogicalResult checkStrict();
  StringAttr paramName(Value v);
  std::optional<Contraction> asContraction(Operation *op);
  void collectForward();
  void collectParams();
  void seedVocabulary();
  void seedHints();
  void seedPairs();
  bool collectColumns(Value v, SmallVectorImpl<Operation *> &leaves,
                      llvm::DenseSet<Value> &visited);
  bool fromConstants(Value v);
  StringAttr addedBias(Value v);
  bool splitsWholeHeads(Operation *contraction) const;
  void seedTensorParallel();
  void warnGatheredFusedProjections();
  void seedData();
  std::optional<ShardingAttr> batchSharding(RankedTensorType type, Location loc,
                                            const Twine &what) const;
  void seedSequence(StringRef axis);
  void seedUlysses();
  void warnIfTensorParallelSplitsNothing();

  ShardingAttr sharded(RankedTensorType type, int64_t dim,
                       StringRef axis) const {
    SmallVector<SmallVector<StringRef>> dims(type.getRank());
    dims[dim].push_back(axis);
    return ShardingAttr::get(ctx, mesh.name(), dims);
  }
  /// Sets `attr` as the sharding of argument `index` unless one is there.
  void seedArg(unsigned index, ShardingAttr attr) {
    if (!argShardings[index])
      setArgSharding(index, attr);
  }
  void setArgSharding(unsigned index, ShardingAttr attr) {
    argShardings[index] = attr;
    argsChanged = true;
  }
  void writeArgShardings();

  func::FuncOp f;
  MLIRContext *ctx;
  const MeshAxes &mesh;
  bool vocabParallel, sequenceParallel;
  MutableArrayRef<Hint> hints;

  /// The forward computation: the ops the loss (the results that are
  /// neither gradients nor optimizer state) depends on. The backward pass
  /// has contractions over the same parameters (dx = dy W) that are not
  /// layers of the model.
  llvm::DenseSet<Operation *> forward;
  /// Every parameter by name, with its global type.
  llvm::StringMap<RankedTensorType> params;
  /// The dimension tp splits, per parameter name (its state follows).
  llvm::StringMap<int64_t> tpDim;
  /// Roles taken so far, per parameter name, and the vocabulary parameters.
  llvm::StringMap<Role> roles;
  llvm::StringSet<> vocabulary;
  /// Key/value projections whose heads tp does not divide: whole by design.
  llvm::StringSet<> wholeHeads;
  /// Why a parameter a rule proposed stays whole after all.
  llvm::StringMap<std::string> whyWhole;
  /// Values from which no column-parallel region leads back (memoized so
  /// that a walk down a residual stream is done once, not once per layer).
  llvm::DenseSet<Value> dead;
  /// Whether a value is computed from constants only (memoized).
  llvm::DenseMap<Value, bool> constantOnly;
  /// Biases met by collectColumns' current walk (addedBias).
  SmallVector<StringAttr> biasesFound;
  /// Whether a rule proposed any tp split at all (for the warning).
  bool anyCandidate = false;
  /// The arguments' shardings, written back at once at the end: setting
  /// argument attributes one by one rebuilds all of them each time,
  /// quadratic in the number of parameters.
  SmallVector<ShardingAttr> argShardings;
  bool argsChanged = false;
};
} // namespace

StringAttr Seeder::paramName(Value v) {
  // Mixed precision feeds the model bf16 copies of f32 master weights.
  if (auto convert = v.getDefiningOp<ConvertOp>())
    v = convert.getInput();
  if (auto param = v.getDefiningOp<ParamOp>())
    return param.getNameAttr();
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (arg.getOwner()->isEntryBlock() &&
        arg.getOwner()->getParentOp() == f.getOperation())
      return f.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                            RTXDialect::getParamAttrName());
  return {};
}

std::optional<Contraction> Seeder::asContraction(Operation *op) {
  if (auto linear = dyn_cast<LinearOp>(op)) {
    StringAttr weight = paramName(linear.getWeight());
    if (!weight)
      return std::nullopt;
    StringAttr bias = linear.getBias() ? paramName(linear.getBias()) : nullptr;
    return Contraction{linear.getInput(), weight, bias, 0, 1};
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    StringAttr weight = paramName(matmul.getRhs());
    if (!weight || matmul.getTransposeLhs())
      return std::nullopt;
    // rhs is [K, N], or [N, K] transposed: N are the output features.
    bool t = matmul.getTransposeRhs();
    return Contraction{matmul.getLhs(), weight, nullptr, t ? 0 : 1, t ? 1 : 0};
  }
  return std::nullopt;
}

void Seeder::collectForward() {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  SmallVector<Value> work;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
    if (!f.getResultAttr(i, RTXDialect::getGradOfAttrName()) &&
        !f.getResultAttr(i, RTXDialect::getStateAttrName()))
      work.push_back(operand);
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || !forward.insert(op).second)
      continue;
    llvm::append_range(work, op->getOperands());
  }
}

void Seeder::collectParams() {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (auto name =
            f.getArgAttrOfType<StringAttr>(i, RTXDialect::getParamAttrName()))
      params[name] = cast<RankedTensorType>(f.getArgumentTypes()[i]);
  for (auto param : f.getOps<ParamOp>())
    params[param.getNameAttr()] = param.getType();
}

/// The vocabulary of a language model: the LM head (the linear producing a
/// cross-entropy's logits) and the tables of embeddings over the same
/// vocabulary (tied to the head in GPT-2), split along it.
void Seeder::seedVocabulary() {
  llvm::SmallDenseSet<int64_t> vocabularies;
  auto add = [&](StringAttr name) {
    if (!name)
      return;
    vocabulary.insert(name);
    tpDim.try_emplace(name, 0);
  };
  for (auto loss : f.getOps<CrossEntropyOp>()) {
    if (!forward.contains(loss))
      continue;
    vocabularies.insert(loss.getLogits().getType().getShape().back());
    if (LinearOp head = languageModelHead(loss)) {
      add(paramName(head.getWeight()));
      if (head.getBias())
        add(paramName(head.getBias()));
    }
  }
  for (auto embedding : f.getOps<EmbeddingOp>())
    if (forward.contains(embedding) &&
        vocabularies.contains(embedding.getTable().getType().getDimSize(0)))
      add(paramName(embedding.getTable()));
}

/// `seed-hints`: parameters named by a suffix take a role before the rules.
void Seeder::seedHints() {
  // The features dimensions of each parameter, from its first contraction.
  llvm::StringMap<std::pair<int64_t, int64_t>> featureDims;
  llvm::StringSet<> biases;
  for (Operation &op : f.getBody().front())
    if (forward.contains(&op))
      if (auto c = asContraction(&op)) {
        featureDims.try_emplace(c->weight, c->outDim, c->inDim);
        if (c->bias)
          biases.insert(c->bias);
      }
  for (Hint &hint : hints) {
    for (auto &[name, type] : params) {
      StringRef base = name;
      if (!base.consume_back(".weight"))
        base.consume_back(".bias");
      auto matches = [&](StringRef n) {
        return n == hint.suffix || n.ends_with("." + hint.suffix);
      };
      if (!matches(name) && !matches(base))
        continue;
      hint.used = true;
      roles.try_emplace(name, hint.role);
      // A bias follows its layer's output features: split with a column,
      // whole with a row (added once, after the partial sums are reduced).
      bool isBias = biases.contains(name) || type.getRank() == 1;
      if (isBias) {
        if (hint.role == Role::Column)
          tpDim.try_emplace(name, 0);
        continue;
      }
      auto dims = featureDims.lookup(name);
      if (!featureDims.count(name))
        dims = {0, 1};
      tpDim.try_emplace(name,
                        hint.role == Role::Column ? dims.first : dims.second);
    }
  }
}

/// Whether `v` is computed from constants alone (a rotary table broadcast
/// to the heads, a causal mask): it may meet a split region anywhere.
bool Seeder::fromConstants(Value v) {
  if (auto it = constantOnly.find(v); it != constantOnly.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  bool result = def && (isa<ConstantOp>(def) ||
                        (def->getNumOperands() > 0 && isPure(def) &&
                         !isa<ParamOp, InputOp>(def) &&
                         llvm::all_of(def->getOperands(), [&](Value operand) {
                           return fromConstants(operand);
                         })));
  constantOnly[v] = result;
  return result;
}

/// False when the contraction's output features are viewed as heads
/// (`[.., H*D] -> [.., H, D]`) that tp does not divide.
bool Seeder::splitsWholeHeads(Operation *contraction) const {
  for (Operation *user : contraction->getResult(0).getUsers()) {
    auto reshape = dyn_cast<ReshapeOp>(user);
    if (!reshape)
      continue;
    ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
    ArrayRef<int64_t> out = reshape.getType().getShape();
    size_t r = out.size();
    if (r == in.size() + 1 && in.back() == out[r - 2] * out[r - 1] &&
        out[r - 2] % mesh.size("tp") != 0)
      return false;
  }
  return true;
}

/// The name of a rank-1 parameter broadcast along the last dimension of
/// `v` (a bias added after a matmul), else null.
StringAttr Seeder::addedBias(Value v) {
  auto broadcast = v.getDefiningOp<BroadcastOp>();
  if (!broadcast || broadcast.getInput().getType().getRank() != 1 ||
      broadcast.getDims()[0] != broadcast.getType().getRank() - 1)
    return {};
  return paramName(broadcast.getInput());
}

/// Walks back from `v` through ops that keep a split of the features (or of
/// the heads made from them) local, to the contractions that compute it.
/// False when some path leads elsewhere (a norm, a data input, ...).
bool Seeder::collectColumns(Value v, SmallVectorImpl<Operation *> &leaves,
                            llvm::DenseSet<Value> &visited) {
  if (dead.contains(v))
    return false;
  if (!visited.insert(v).second)
    return true;
  auto through = [&](ValueRange operands) {
    for (Value operand : operands)
      if (!collectColumns(operand, leaves, visited))
        return false;
    return true;
  };
  Operation *def = v.getDefiningOp();
  bool ok = false;
  if (!def || !forward.contains(def)) {
    ok = false;
  } else if (asContraction(def)) {
    leaves.push_back(def);
    ok = true;
  } else if (isa<ReshapeOp, TransposeOp, RopeOp, SplitOp, SliceOp, BroadcastOp,
                 ConcatOp>(def)) {
    // Rotary embeddings written out (halves by slices and concat, pairs by
    // a reshape to [..., D/2, 2], a split and a concat) and key/value heads
    // repeated for grouped-query attention (a broadcast) act within a
    // head. Constants they mix in (rotary tables) come from anywhere.
    ok = true;
    for (Value operand : def->getOperands())
      if (!fromConstants(operand) &&
          !collectColumns(operand, leaves, visited)) {
        ok = false;
        break;
      }
  } else if (auto attention = dyn_cast<AttentionOp>(def)) {
    // tp splits whole heads: query heads and key/value heads alike.
    int64_t tp = mesh.size("tp");
    ok = attention.getQuery().getType().getDimSize(1) % tp == 0 &&
         attention.getKey().getType().getDimSize(1) % tp == 0 &&
         through(
             {attention.getQuery(), attention.getKey(), attention.getValue()});
  } else if (def->hasTrait<OpTrait::Elementwise>()) {
    // Every float operand from the region (masks and constants may come
    // from anywhere).
    ok = true;
    for (Value operand : def->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      if (!isa<FloatType>(type.getElementType()) || fromConstants(operand))
        continue;
      // A bias added after a matmul (GPT-2's Conv1D: x W + b) follows the
      // features the column layer splits.
      if (StringAttr bias = addedBias(operand)) {
        biasesFound.push_back(bias);
        continue;
      }
      if (!collectColumns(operand, leaves, visited)) {
        ok = false;
        break;
      }
    }
  }
  if (!ok)
    dead.insert(v);
  return ok;
}

/// Megatron's pairs: each contraction whose input the column-parallel
/// region computes is row-parallel, and that region's contractions are
/// column-parallel. In program order; a parameter keeps its first role.
void Seeder::seedPairs() {
  for (Operation &op : f.getBody().front()) {
    if (!forward.contains(&op))
      continue;
    std::optional<Contraction> row = asContraction(&op);
    if (!row || vocabulary.contains(row->weight))
      continue;
    auto it = roles.find(row->weight);
    if (it != roles.end() && it->second != Role::Row)
      continue;
    SmallVector<Operation *> leaves;
    llvm::DenseSet<Value> visited;
    biasesFound.clear();
    if (!collectColumns(row->input, leaves, visited) || leaves.empty())
      continue;
    SmallVector<Contraction> columns;
    bool compatible = true;
    for (Operation *leaf : leaves) {
      // Key/value heads that tp does not divide (grouped-query attention
      // with fewer of them than ranks) stay whole on every rank, as
      // Megatron keeps them: each rank reads the ones its query heads use.
      if (!splitsWholeHeads(leaf)) {
        wholeHeads.insert(asContraction(leaf)->weight);
        continue;
      }
      Contraction c = *asContraction(leaf);
      auto role = roles.find(c.weight);
      compatible &= !vocabulary.contains(c.weight) &&
                    (role == roles.end() || role->second == Role::Column) &&
                    c.weight != row->weight;
      columns.push_back(c);
    }
    if (!compatible)
      continue;
    roles.try_emplace(row->weight, Role::Row);
    tpDim.try_emplace(row->weight, row->inDim);
    for (const Contraction &c : columns) {
      roles.try_emplace(c.weight, Role::Column);
      tpDim.try_emplace(c.weight, c.outDim);
      if (c.bias)
        tpDim.try_emplace(c.bias, 0);
    }
    for (StringAttr bias : biasesFound)
      tpDim.try_emplace(bias, 0);
  }
}

void Seeder::seedTensorParallel() {
  int64_t tp = mesh.size("tp");
  seedHints();
  if (vocabParallel)
    seedVocabulary();
  seedPairs();
  anyCandidate = !tpDim.empty();
  // The documented rule for dimensions tp does not divide: replicated, with
  // a warning that names them (a vocabulary is padded before, by
  // rtx-pad-vocabulary).
  SmallVector<StringRef> names;
  for (auto &entry : tpDim)
    names.push_back(entry.getKey());
  llvm::sort(names);
  for (StringRef name : names) {
    int64_t dim = tpDim.lookup(name);
    RankedTensorType type = params.lookup(name);
    if (!type || dim >= type.getRank()) {
      tpDim.erase(name);
      continue;
    }
    if (type.getDimSize(dim) % tp != 0) {
      whyWhole[name] =
          ("dimension " + Twine(dim) + " of size " +
           Twine(type.getDimSize(dim)) + " is not divisible by " + Twine(tp))
              .str();
      mlir::emitWarning(f.getLoc())
          << "parameter \"" << name << "\" stays replicated: dimension " << dim
          << " of size " << type.getDimSize(dim)
          << " is not divisible by axis \"tp\" of size " << tp;
      tpDim.erase(name);
    }
  }
  // Parameters as ops (before rtx-optimizer) or as arguments, with their
  // optimizer state ("param:NAME", "exp_avg:NAME", ...), which follows them.
  for (auto param : f.getOps<ParamOp>()) {
    auto it = tpDim.find(param.getName());
    if (it != tpDim.end() && !param->hasAttr(RTXDialect::getShardingAttrName()))
      param->setAttr(RTXDialect::getShardingAttrName(),
                     sharded(param.getType(), it->second, "tp"));
  }
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    StringRef name;
    if (auto state =
            f.getArgAttrOfType<StringAttr>(i, RTXDialect::getStateAttrName()))
      name = state.getValue().split(':').second;
    else if (auto param = f.getArgAttrOfType<StringAttr>(
                 i, RTXDialect::getParamAttrName()))
      name = param.getValue();
    auto it = name.empty() ? tpDim.end() : tpDim.find(name);
    if (it != tpDim.end())
      seedArg(i, sharded(cast<RankedTensorType>(f.getArgumentTypes()[i]),
                         it->second, "tp"));
  }
  warnGatheredFusedProjections();
}

/// A column-parallel projection whose output features are split into
/// parts (GPT-2's fused q | k | v) splits each rank's block across the
/// parts, so the partitioner gathers it before the split: say so, since
/// ordering the features by head (Megatron's layout) avoids it.
void Seeder::warnGatheredFusedProjections() {
  for (auto linear : f.getOps<LinearOp>()) {
    StringAttr name = paramName(linear.getWeight());
    auto it = name ? tpDim.find(name) : tpDim.end();
    if (it == tpDim.end() || it->second != 0 || vocabulary.contains(name))
      continue;
    int64_t features = linear.getType().getRank() - 1;
    for (Operation *user : linear->getUsers())
      if (auto split = dyn_cast<SplitOp>(user);
          split && static_cast<int64_t>(split.getDim()) == features &&
          split.getNumResults() > 1)
        mlir::emitWarning(split.getLoc())
            << "the output of \"" << name.getValue() << "\" is split into "
            << split.getNumResults()
            << " parts along the features tp splits: tp gathers it first "
               "(order the features by head, Megatron's layout, for "
               "head-parallel attention)";
  }
}

/// The batch's sharding: dimension 0 over the data axes, dp_replicate (HSDP's
/// replicas, major) then dp; none (with a warning naming `what`) when their
/// product does not divide it, or when there is no data axis.
std::optional<ShardingAttr> Seeder::batchSharding(RankedTensorType type,
                                                  Location loc,
                                                  const Twine &what) const {
  SmallVector<StringRef> axes;
  int64_t ranks = 1;
  for (StringRef axis : {StringRef("dp_replicate"), StringRef("dp")})
    if (mesh.size(axis) > 1) {
      axes.push_back(axis);
      ranks *= mesh.size(axis);
    }
  if (axes.empty() || type.getRank() == 0)
    return std::nullopt;
  if (type.getDimSize(0) % ranks != 0) {
    mlir::emitWarning(loc) << what << " stays replicated: dimension 0 of size "
                           << type.getDimSize(0) << " is not divisible by "
                           << (axes.size() == 1 ? "axis \"" : "axes \"")
                           << llvm::join(axes.begin(), axes.end(), "\" x \"")
                           << "\" of size " << ranks;
    return std::nullopt;
  }
  SmallVector<SmallVector<StringRef>> dims(type.getRank());
  dims[0].assign(axes.begin(), axes.end());
  return ShardingAttr::get(ctx, mesh.name(), dims);
}

/// dp: the batch (dimension 0) of every data argument.
void Seeder::seedData() {
  // Data arguments are numbered among themselves (argN in rtx-run).
  unsigned dataIndex = 0;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
    if (f.getArgAttr(i, RTXDialect::getStateAttrName()) ||
        f.getArgAttr(i, RTXDialect::getParamAttrName()))
      continue;
    unsigned data = dataIndex++;
    if (auto batch =
            batchSharding(type, f.getLoc(), "data argument " + Twine(data)))
      seedArg(i, *batch);
  }
}

/// Splits dimension 1 (the sequence) of every data input over `axis`.
void Seeder::seedSequence(StringRef axis) {
  int64_t size = mesh.size(axis);
  auto seedLayout = [&](RankedTensorType type,
                        ShardingAttr attr) -> std::optional<ShardingAttr> {
    if (type.getRank() < 2 || type.getDimSize(1) % size != 0)
      return std::nullopt;
    Layout layout =
        attr ? Layout::fromAttr(attr) : Layout::replicated(type.getRank());
    if (!layout.dims[1].empty() || layout.uses(axis))
      return std::nullopt;
    layout.dims[1].push_back(axis.str());
    return layout.toAttr(ctx, mesh.name());
  };
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    if (f.getArgAttr(i, RTXDialect::getStateAttrName()) ||
        f.getArgAttr(i, RTXDialect::getParamAttrName()))
      continue;
    if (auto attr = seedLayout(cast<RankedTensorType>(f.getArgumentTypes()[i]),
                               argShardings[i]))
      setArgSharding(i, *attr);
  }
  for (auto input : f.getOps<InputOp>())
    if (auto attr =
            seedLayout(input.getType(), input->getAttrOfType<ShardingAttr>(
                                            RTXDialect::getShardingAttrName())))
      input->setAttr(RTXDialect::getShardingAttrName(), *attr);
}

/// DeepSpeed-Ulysses: attention runs on whole sequences for a subset of
/// heads, so the partitioner exchanges sequence for heads with all-to-alls.
void Seeder::seedUlysses() {
  int64_t tp = mesh.size("tp"), sp = mesh.size("sp");
  seedSequence("sp");
  SmallVector<Operation *> attentions;
  for (Operation &op : f.getBody().front())
    if (isa<AttentionOp, AttentionGradOp>(op))
      attentions.push_back(&op);
  for (Operation *attention : attentions) {
    auto key = cast<RankedTensorType>(attention->getOperand(1).getType());
    SmallVector<StringRef> heads;
    if (tp > 1)
      heads.push_back("tp");
    heads.push_back("sp");
    int64_t split = tp * sp;
    if (key.getDimSize(1) % split != 0) {
      mlir::emitWarning(attention->getLoc())
          << "attention keeps whole heads: its " << key.getDimSize(1)
          << " key/value heads are not divisible by " << split
          << "; the sequence is gathered instead";
      continue;
    }
    SmallVector<SmallVector<StringRef>> dims(4);
    dims[1] = heads;
    auto sharding = ShardingAttr::get(ctx, mesh.name(), dims);
    if (attention->getNumResults() == 1) {
      attention->setAttr(RTXDialect::getShardingAttrName(), sharding);
    } else {
      SmallVector<Attribute> all(attention->getNumResults(), sharding);
      attention->setAttr(RTXDialect::getShardingAttrName(),
                         ArrayAttr::get(ctx, all));
    }
  }
}

/// A tp axis that splits nothing leaves every rank computing the whole
/// model: say so, loudly, with the way out.
void Seeder::warnIfTensorParallelSplitsNothing() {
  auto usesTP = [](Attribute attr) {
    auto check = [](Attribute a) {
      auto s = dyn_cast_or_null<ShardingAttr>(a);
      return s && Layout::fromAttr(s).uses("tp");
    };
    if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
      return llvm::any_of(array, check);
    return check(attr);
  };
  for (ShardingAttr attr : argShardings)
    if (usesTP(attr))
      return;
  bool any = false;
  f.walk([&](Operation *op) {
    if (op != f.getOperation() &&
        usesTP(op->getAttr(RTXDialect::getShardingAttrName())))
      any = true;
  });
  if (any)
    return;
  InFlightDiagnostic warning = mlir::emitWarning(f.getLoc())
                               << "mesh axis \"tp\" of size " << mesh.size("tp")
                               << " splits nothing in @" << f.getName() << ": ";
  if (anyCandidate)
    warning << "no dimension it would split is divisible by "
            << mesh.size("tp");
  else
    warning << "no linear or matmul over a parameter feeds another through "
               "elementwise ops or attention (Megatron's column- and "
               "row-parallel pair)"
            << (vocabParallel ? ", and no cross-entropy's vocabulary comes "
                                "from one"
                              : " (and vocab-parallel=false)");
  warning << "; every rank computes the whole model (give "
             "seed-hints=NAME:column|row, or rtx.sharding seeds)";
}

void Seeder::writeArgShardings() {
  if (!argsChanged)
    return;
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    NamedAttrList list(f.getArgAttrDict(i));
    if (argShardings[i])
      list.set(RTXDialect::getShardingAttrName(), argShardings[i]);
    attrs.push_back(list.getDictionary(ctx));
  }
  f.setAllArgAttrs(attrs);
}

LogicalResult Seeder::run(bool strict) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    argShardings.push_back(
        f.getArgAttrOfType<ShardingAttr>(i, RTXDialect::getShardingAttrName()));
  collectForward();
  collectParams();
  if (mesh.size("tp") > 1)
    seedTensorParallel();
  seedData();
  // Megatron sequence parallelism: outside the tensor-parallel regions the
  // activations are split along the sequence over tp. Seeding the data
  // inputs' sequence dimension over tp lets propagation carry that split
  // through embeddings, norms, dropout and residuals; the partitioner then
  // all-gathers the sequence before each column-parallel projection and
  // reduce-scatters the row-parallel partial sums back into it.
  if (sequenceParallel)
    seedSequence("tp");
  if (mesh.size("sp") > 1)
    seedUlysses();
  for (auto input : f.getOps<InputOp>())
    if (!input->hasAttr(RTXDialect::getShardingAttrName()))
      if (auto batch = batchSharding(input.getType(), input.getLoc(),
                                     "input \"" + input.getName() + "\""))
        input->setAttr(RTXDialect::getShardingAttrName(), *batch);
  if (mesh.size("tp") > 1)
    warnIfTensorParallelSplitsNothing();
  writeArgShardings();
  return strict && mesh.size("tp") > 1 ? checkStrict() : success();
}

/// strict-tp: every linear and matmul over a parameter in the forward pass
/// is split on tp, but for key/value heads kept whole by design.
LogicalResult Seeder::checkStrict() {
  bool ok = true;
  llvm::StringSet<> reported;
  for (Operation &op : f.getBody().front()) {
    std::optional<Contraction> c =
        forward.contains(&op) ? asContraction(&op) : std::nullopt;
    if (!c || tpDim.count(c->weight) || wholeHeads.contains(c->weight) ||
        !reported.insert(c->weight).second)
      continue;
    auto it = whyWhole.find(c->weight);
    mlir::emitError(op.getLoc())
        << "parameter \"" << c->weight.getValue() << "\" of this "
        << op.getName() << " stays whole on axis \"tp\" of size "
        << mesh.size("tp") << ": "
        << (it != whyWhole.end()
                ? it->second
                : std::string("no Megatron pair (a column-parallel layer "
                              "feeding a row-parallel one through "
                              "elementwise ops, attention or layout ops) "
                              "includes it"))
        << "; strict-tp refuses it (name its role with seed-hints, or "
           "drop strict-tp to keep it replicated)";
    ok = false;
  }
  return success(ok);
}

namespace {
struct RTXSeedShardingsPass
    : mlir::rtx::impl::RTXSeedShardingsBase<RTXSeedShardingsPass> {
  using RTXSeedShardingsBase::RTXSeedShardingsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-seed-shardings");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    for (Attribute axis : meshOp->getAxisNames()) {
      StringRef name = cast<StringAttr>(axis).getValue();
      // pp splits no tensor: rtx-pipeline gives each stage its own ops.
      if (name != "dp" && name != "dp_replicate" && name != "tp" &&
          name != "sp" && name != "pp") {
        mlir::emitError(meshOp->getLoc())
            << "rtx-seed-shardings: no seeding rule for mesh axis '" << name
            << "'; expected dp, dp_replicate, tp, sp or pp";
        return signalPassFailure();
      }
    }
    if (sequenceParallel && mesh.size("tp") == 1) {
      mlir::emitError(meshOp->getLoc())
          << "rtx-seed-shardings: sequence-parallel=true needs a tp axis "
             "larger than 1 (Megatron sequence parallelism splits the "
             "sequence over tp)";
      return signalPassFailure();
    }
    if (sequenceParallel && mesh.size("sp") > 1) {
      mlir::emitError(meshOp->getLoc())
          << "rtx-seed-shardings: sequence-parallel=true (over tp) and an sp "
             "axis cannot be combined";
      return signalPassFailure();
    }
    SmallVector<Hint> hints;
    for (const std::string &entry : seedHints) {
      auto [suffix, role] = StringRef(entry).trim().rsplit(':');
      if (suffix.empty() || (role != "column" && role != "row")) {
        mlir::emitError(module.getLoc())
            << "rtx-seed-shardings: bad seed hint '" << entry
            << "'; expected NAME:column or NAME:row (NAME a "
               "parameter-name suffix, e.g. q_proj:column)";
        return signalPassFailure();
      }
      hints.push_back(
          {suffix.str(), role == "column" ? Role::Column : Role::Row});
    }
    bool failed = false;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        failed |=
            mlir::failed(Seeder(f, mesh, vocabParallel, sequenceParallel, hints)
                             .run(strictTP));
    if (failed)
      return signalPassFailure();
    if (mesh.size("tp") > 1)
      for (const Hint &hint : hints)
        if (!hint.used)
          mlir::emitWarning(module.getLoc())
              << "seed hint '" << hint.suffix << ":"
              << (hint.role == Role::Column ? "column" : "row")
              << "' matches no parameter";
  }
};
} // namespace
