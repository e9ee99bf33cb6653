//===- ShardState.cpp - the rtx-shard-state pass --------------------------===//
//
// ZeRO-1/2/3 and FSDP on the partitioned step: the optimizer state, the
// gradients and (stage 3) the parameters of each unit become one flat buffer
// per rank, 1/N of the unit's members. See Passes.td and docs/fsdp.md.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "rtx/Analysis/ProgramDescription.h"
#include "rtx/Analysis/ShardUnit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <set>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXSHARDSTATE
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

/// One parameter and what its update reads and writes.
struct Member {
  Operation *update = nullptr; // rtx.adamw_update or rtx.sgd_update
  BlockArgument param;
  std::string name;
  RankedTensorType type; // the local (per-rank) type
  ShardingAttr sharding; // over the other axes (tp, ...)
  /// The gradient the update reads (clipped or not), the all-reduce it
  /// comes from and that all-reduce's input (the partial sum).
  Value grad;
  AllReduceOp reduce;
  Value partial;
  Value clipScale; // the scalar the gradient is multiplied by, or null
  Value unclipped; // the gradient before that
  SmallVector<BlockArgument> moments; // exp_avg, exp_avg_sq (AdamW)
  /// Results: the new parameter's, then each moment's.
  SmallVector<int64_t> results;
  int64_t offset = 0;
  int64_t numel() const { return type.getNumElements(); }
};

/// The members that share one flat buffer.
struct Buffer {
  std::string unit;
  SmallVector<Member *> members;
  SmallVector<StringRef> splitAxes; // axes other than `axis` that split them
  SmallVector<StringRef> otherReduceAxes; // the gradients' other reductions
  /// The gradients are whole on every rank of the axis (not summed over
  /// it): their shard is a slice, at every stage.
  bool sliceGrads = false;
  int64_t length = 0, padded = 0, shard = 0;
  Type elementType;
};

struct RTXShardStatePass
    : mlir::rtx::impl::RTXShardStateBase<RTXShardStatePass> {
  using RTXShardStateBase::RTXShardStateBase;

  void runOnOperation() override {
    if (stage < 1 || stage > 3) {
      getOperation().emitError()
          << "rtx-shard-state: stage must be 1, 2 or 3, got "
          << static_cast<int64_t>(stage);
      return signalPassFailure();
    }
    if (unit != "block" && unit != "param" && unit != "all" && unit != "size" &&
        unit != "prefix") {
      getOperation().emitError() << "rtx-shard-state: unit must be block, "
                                    "param, all, size or prefix, got '"
                                 << unit << "'";
      return signalPassFailure();
    }
    if ((unit == "size") != (minUnitParams > 0)) {
      getOperation().emitError()
          << "rtx-shard-state: unit=size and min-unit-params=N (N > 0) go "
             "together, got unit="
          << unit << " min-unit-params=" << static_cast<int64_t>(minUnitParams);
      return signalPassFailure();
    }
    if ((unit == "prefix") != !unitPrefixes.empty()) {
      getOperation().emitError()
          << "rtx-shard-state: unit=prefix and unit-prefixes=a,b go "
             "together, got unit="
          << unit << " with " << unitPrefixes.size() << " prefixes";
      return signalPassFailure();
    }
    if (offload != "none" && offload != "cpu" && offload != "nvme") {
      getOperation().emitError() << "rtx-shard-state: offload must be none, "
                                    "cpu or nvme, got '"
                                 << offload << "'";
      return signalPassFailure();
    }
    if (reduceDtype != "f32" && reduceDtype != "bf16" && reduceDtype != "f16") {
      getOperation().emitError() << "rtx-shard-state: reduce-dtype must be "
                                    "f32, bf16 or f16, got '"
                                 << reduceDtype << "'";
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh = getProgramMesh(getOperation());
    if (failed(mesh))
      return signalPassFailure();
    SmallVector<func::FuncOp> steps;
    getOperation().walk([&](func::FuncOp f) {
      if (f->hasAttr(RTXDialect::getTrainStepAttrName()))
        steps.push_back(f);
    });
    if (steps.empty()) {
      getOperation().emitError()
          << "rtx-shard-state: no training step (a function that "
             "rtx-optimizer made, with rtx.train_step)";
      return signalPassFailure();
    }
    for (func::FuncOp f : steps)
      if (failed(shard(f, *mesh)) ||
          (offload != "none" && failed(offloadBuffers(f))))
        return signalPassFailure();
  }
  LogicalResult offloadBuffers(func::FuncOp function);

  LogicalResult shard(func::FuncOp function, MeshOp mesh);
  /// Each member's unit by the `unit` policy.
  std::vector<std::string> unitsOf(const std::vector<Member> &members);
  LogicalResult collect(func::FuncOp function, MeshOp mesh,
                        std::vector<Member> &members);
};

/// Whether `name` is `prefix` or lies under it in the dotted name tree.
static bool isUnder(StringRef name, StringRef prefix) {
  return name == prefix ||
         (name.starts_with(prefix) && name.size() > prefix.size() &&
          name[prefix.size()] == '.');
}

std::vector<std::string>
RTXShardStatePass::unitsOf(const std::vector<Member> &members) {
  std::vector<std::string> units;
  if (unit == "prefix") {
    // The longest listed prefix: nested wrapped modules own their own.
    for (const Member &m : members) {
      std::string best = "root";
      size_t length = 0;
      for (const std::string &prefix : unitPrefixes)
        if (isUnder(m.name, prefix) && prefix.size() >= length)
          best = prefix, length = prefix.size();
      units.push_back(best);
    }
    return units;
  }
  if (unit != "size") {
    for (const Member &m : members)
      units.push_back(shardUnitOf(m.name, unit));
    return units;
  }
  // FSDP's size-based policy, bottom up over the dotted name tree: a prefix
  // becomes a unit once the elements under it that no deeper unit took
  // reach min-unit-params.
  units.assign(members.size(), "");
  std::map<size_t, std::set<std::string>> prefixesByDepth;
  for (const Member &m : members) {
    SmallVector<StringRef> parts;
    StringRef(m.name).split(parts, '.');
    std::string prefix;
    for (size_t d = 0; d + 1 < parts.size(); ++d) {
      prefix += (d ? "." : "") + parts[d].str();
      prefixesByDepth[d + 1].insert(prefix);
    }
  }
  for (auto depth = prefixesByDepth.rbegin(); depth != prefixesByDepth.rend();
       ++depth)
    for (const std::string &prefix : depth->second) {
      int64_t elements = 0;
      for (size_t i = 0; i < members.size(); ++i)
        if (units[i].empty() && isUnder(members[i].name, prefix))
          elements += members[i].numel();
      if (elements < minUnitParams)
        continue;
      for (size_t i = 0; i < members.size(); ++i)
        if (units[i].empty() && isUnder(members[i].name, prefix))
          units[i] = prefix;
    }
  for (std::string &u : units)
    if (u.empty())
      u = "root";
  return units;
}

LogicalResult RTXShardStatePass::collect(func::FuncOp function, MeshOp mesh,
                                         std::vector<Member> &members) {
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  auto resultOf = [&](Value v) -> int64_t {
    for (OpOperand &use : v.getUses())
      if (use.getOwner() == ret)
        return use.getOperandNumber();
    return -1;
  };
  WalkResult walk = function.walk([&](Operation *op) {
    if (!isa<AdamWUpdateOp, SGDUpdateOp>(op))
      return WalkResult::advance();
    Member m;
    m.update = op;
    m.param = dyn_cast<BlockArgument>(op->getOperand(0));
    auto name =
        m.param ? function.getArgAttrOfType<StringAttr>(
                      m.param.getArgNumber(), RTXDialect::getParamAttrName())
                : StringAttr();
    if (!name) {
      op->emitError() << "rtx-shard-state: the updated parameter is not an "
                         "argument with rtx.param";
      return WalkResult::interrupt();
    }
    m.name = name.str();
    m.type = cast<RankedTensorType>(m.param.getType());
    m.sharding = function.getArgAttrOfType<ShardingAttr>(
        m.param.getArgNumber(), RTXDialect::getShardingAttrName());
    if (m.sharding)
      for (int64_t d = 0; d < m.sharding.getRank(); ++d)
        if (llvm::is_contained(m.sharding.getDimAxes(d), axis.getValue())) {
          op->emitError() << "rtx-shard-state: parameter '" << m.name
                          << "' is already split over \"" << axis << "\"";
          return WalkResult::interrupt();
        }
    m.grad = op->getOperand(1);
    Value raw = m.grad;
    if (auto mul = raw.getDefiningOp<MulOp>())
      for (unsigned i = 0; i < 2; ++i)
        if (auto bcast = mul->getOperand(1 - i).getDefiningOp<BroadcastOp>())
          if (cast<RankedTensorType>(bcast.getInput().getType()).getRank() ==
              0) {
            m.clipScale = bcast.getInput();
            raw = mul->getOperand(i);
            break;
          }
    m.unclipped = raw;
    m.reduce = raw.getDefiningOp<AllReduceOp>();
    bool overAxis =
        m.reduce && m.reduce.getKind() == ReductionKind::Sum &&
        llvm::is_contained(m.reduce.getAxes().getAsValueRange<StringAttr>(),
                           axis.getValue());
    if (!overAxis) {
      // Not reduced over the axis: the gradient must then be whole on each
      // of its ranks (a batch the axis does not divide stays replicated),
      // and its shard is a slice.
      m.reduce = nullptr;
      Operation *def = raw.getDefiningOp();
      auto sharding = def ? def->getAttrOfType<ShardingAttr>(
                                RTXDialect::getShardingAttrName())
                          : ShardingAttr();
      if (sharding &&
          llvm::is_contained(sharding.getPartialAxes(), axis.getValue())) {
        op->emitError() << "rtx-shard-state: the gradient of '" << m.name
                        << "' holds partial sums over \"" << axis
                        << "\" that no rtx.all_reduce sums";
        return WalkResult::interrupt();
      }
    } else {
      m.partial = m.reduce.getInput();
    }
    m.results.push_back(resultOf(op->getResult(0)));
    if (auto adam = dyn_cast<AdamWUpdateOp>(op)) {
      for (Value moment : {adam.getExpAvg(), adam.getExpAvgSq()}) {
        auto arg = dyn_cast<BlockArgument>(moment);
        if (!arg || !moment.hasOneUse()) {
          op->emitError() << "rtx-shard-state: the moments of '" << m.name
                          << "' must be arguments used by its update only";
          return WalkResult::interrupt();
        }
        m.moments.push_back(arg);
      }
      m.results.push_back(resultOf(adam.getNewExpAvg()));
      m.results.push_back(resultOf(adam.getNewExpAvgSq()));
    }
    if (llvm::is_contained(m.results, -1)) {
      op->emitError() << "rtx-shard-state: the update of '" << m.name
                      << "' is not returned whole";
      return WalkResult::interrupt();
    }
    members.push_back(std::move(m));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (members.empty())
    return function.emitError()
           << "rtx-shard-state: the step updates no parameter";
  return success();
}

/// `values` (each one member) flattened, concatenated and padded to
/// `padded` elements.
static Value flatten(OpBuilder &b, Location loc, ValueRange values,
                     int64_t length, int64_t padded, Type element) {
  SmallVector<Value> flat;
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    flat.push_back(ReshapeOp::create(
        b, loc, RankedTensorType::get({type.getNumElements()}, element), v));
  }
  Value joined =
      flat.size() == 1
          ? flat.front()
          : ConcatOp::create(b, loc, RankedTensorType::get({length}, element),
                             flat, 0)
                .getResult();
  if (padded == length)
    return joined;
  return PadOp::create(b, loc, RankedTensorType::get({padded}, element), joined,
                       b.getDenseI64ArrayAttr({0}),
                       b.getDenseI64ArrayAttr({padded - length}));
}

/// The members of a whole buffer (`padded` elements), in their own types.
static SmallVector<Value> unflatten(OpBuilder &b, Location loc, Value whole,
                                    const Buffer &buffer) {
  Value data = whole;
  if (buffer.padded != buffer.length)
    data = SliceOp::create(
        b, loc, RankedTensorType::get({buffer.length}, buffer.elementType),
        whole, b.getDenseI64ArrayAttr({0}),
        b.getDenseI64ArrayAttr({buffer.length}));
  SmallVector<Value> pieces;
  if (buffer.members.size() == 1) {
    pieces.push_back(data);
  } else {
    SmallVector<Type> types;
    for (Member *m : buffer.members)
      types.push_back(RankedTensorType::get({m->numel()}, buffer.elementType));
    auto split = SplitOp::create(b, loc, types, data, 0);
    llvm::append_range(pieces, split.getResults());
  }
  SmallVector<Value> out;
  for (auto [m, piece] : llvm::zip(buffer.members, pieces))
    out.push_back(ReshapeOp::create(b, loc, m->type, piece));
  return out;
}

static Type elementTypeNamed(MLIRContext *context, StringRef name) {
  if (name == "bf16")
    return BFloat16Type::get(context);
  if (name == "f16")
    return Float16Type::get(context);
  return Float32Type::get(context);
}

/// Erases ops without uses that compute nothing else (pure ops and
/// collectives, which every rank drops alike), last first.
static void eraseDead(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty() ||
          op.getNumResults() == 0)
        continue;
      if (!isPure(&op) && !isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
        continue;
      op.erase();
      changed = true;
    }
  }
}

LogicalResult RTXShardStatePass::shard(func::FuncOp function, MeshOp mesh) {
  int64_t n = 0;
  for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
    if (cast<StringAttr>(name).getValue() == axis)
      n = size;
  if (n == 0)
    return function.emitError()
           << "rtx-shard-state: mesh @" << mesh.getSymName()
           << " has no axis \"" << axis << "\"";
  std::vector<Member> members;
  if (failed(collect(function, mesh, members)))
    return failure();
  FailureOr<ProgramDescription> program = describeProgram(function, mesh);
  if (failed(program))
    return failure();

  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *context = function.getContext();
  OpBuilder b(context);
  Location loc = function.getLoc();
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  auto axisAttr = b.getStrArrayAttr({axis.getValue()});
  auto sum = ReductionKindAttr::get(context, ReductionKind::Sum);

  // Group the members into buffers.
  std::vector<std::string> units = unitsOf(members);
  std::vector<Buffer> buffers;
  std::map<std::string, size_t> bufferOf;
  for (Member &m : members) {
    Buffer probe;
    if (m.sharding)
      for (int64_t d = 0; d < m.sharding.getRank(); ++d)
        for (StringRef a : m.sharding.getDimAxes(d))
          probe.splitAxes.push_back(a);
    llvm::sort(probe.splitAxes);
    if (m.reduce) {
      for (StringRef a : m.reduce.getAxes().getAsValueRange<StringAttr>())
        if (a != axis)
          probe.otherReduceAxes.push_back(a);
    } else {
      probe.sliceGrads = true;
    }
    std::string key = units[&m - members.data()] + "|" +
                      llvm::join(probe.splitAxes, ",") + "|" +
                      llvm::join(probe.otherReduceAxes, ",") + "|" +
                      (probe.sliceGrads ? "slice|" : "");
    llvm::raw_string_ostream os(key);
    os << m.type.getElementType() << "|" << m.update->getName() << "|";
    for (NamedAttribute attr : m.update->getAttrs())
      if (attr.getName() != RTXDialect::getShardingAttrName())
        os << attr.getName() << "=" << attr.getValue() << ",";
    os << "|" << (m.clipScale ? m.clipScale.getAsOpaquePointer() : nullptr);
    auto [it, fresh] = bufferOf.try_emplace(key, buffers.size());
    if (fresh)
      buffers.push_back(Buffer());
    Buffer &buffer = buffers[it->second];
    if (fresh) {
      buffer = probe;
      buffer.unit = units[&m - members.data()];
      buffer.elementType = m.type.getElementType();
    }
    m.offset = buffer.length;
    buffer.length += m.numel();
    buffer.members.push_back(&m);
  }
  for (Buffer &buffer : buffers) {
    buffer.padded = (buffer.length + n - 1) / n * n;
    buffer.shard = buffer.padded / n;
  }

  // Forward uses of a parameter from backward ones.
  llvm::DenseSet<Operation *> forward = forwardOps(*program);

  // Every result keeps its index in the step's results: flat buffers
  // replace some, and readers put their members back in place. (A pipeline
  // coordinate's results have theirs from rtx-pipeline.)
  unsigned numResults = function.getNumResults();
  for (unsigned i = 0; i < numResults; ++i)
    if (!function.getResultAttr(i, RTXDialect::getStepResultAttrName()))
      function.setResultAttr(i, RTXDialect::getStepResultAttrName(),
                             b.getI64IntegerAttr(i));

  struct NewValue {
    Type type;
    DictionaryAttr attrs;
    Value value; // results only
  };
  SmallVector<NewValue> newArgs, newResults;
  llvm::BitVector eraseArgs(function.getNumArguments());
  llvm::BitVector eraseResults(numResults);
  auto layout = [&](const Buffer &buffer, StringRef kind,
                    unsigned which) -> DictionaryAttr {
    SmallVector<Attribute> list;
    for (Member *m : buffer.members) {
      unsigned arg = which == 0 ? m->param.getArgNumber()
                                : m->moments[which - 1].getArgNumber();
      SmallVector<NamedAttribute> fields = {
          b.getNamedAttr("name", b.getStringAttr(m->name)),
          b.getNamedAttr("kind", b.getStringAttr(kind)),
          b.getNamedAttr("offset", b.getI64IntegerAttr(m->offset)),
          b.getNamedAttr("type", TypeAttr::get(m->type)),
          // The member's index among the step's results.
          b.getNamedAttr("result", function.getResultAttrOfType<IntegerAttr>(
                                       m->results[which],
                                       RTXDialect::getStepResultAttrName()))};
      StringAttr state = function.getArgAttrOfType<StringAttr>(
          arg, RTXDialect::getStateAttrName());
      fields.push_back(b.getNamedAttr(
          "state", state ? state : b.getStringAttr("param:" + m->name)));
      if (m->sharding)
        fields.push_back(b.getNamedAttr("sharding", m->sharding));
      if (which == 0) {
        for (StringRef field :
             {RTXDialect::getInitAttrName(), RTXDialect::getSeedAttrName(),
              RTXDialect::getPartOfAttrName()})
          if (Attribute a = function.getArgAttr(arg, field))
            fields.push_back(b.getNamedAttr(field.drop_front(4), a));
      }
      list.push_back(b.getDictionaryAttr(fields));
    }
    return b.getDictionaryAttr(
        {b.getNamedAttr("axis", b.getStringAttr(axis.getValue())),
         b.getNamedAttr("length", b.getI64IntegerAttr(buffer.length)),
         b.getNamedAttr("members", b.getArrayAttr(list))});
  };
  auto shardType = [&](const Buffer &buffer) {
    return RankedTensorType::get({buffer.shard}, buffer.elementType);
  };
  auto flatArg = [&](const Buffer &buffer, StringRef key, StringRef kind,
                     unsigned which) {
    auto shardingAttr = ShardingAttr::get(
        context, meshRef,
        b.getArrayAttr({b.getArrayAttr({b.getStringAttr(axis.getValue())})}),
        b.getArrayAttr({}));
    DictionaryAttr attrs = b.getDictionaryAttr(
        {b.getNamedAttr(RTXDialect::getStateAttrName(), b.getStringAttr(key)),
         b.getNamedAttr(RTXDialect::getFlatAttrName(),
                        layout(buffer, kind, which)),
         b.getNamedAttr(RTXDialect::getShardingAttrName(), shardingAttr)});
    BlockArgument arg = body.addArgument(shardType(buffer), loc);
    newArgs.push_back({arg.getType(), attrs, arg});
    return arg;
  };

  // Norm terms for clipping from shards (stage 2 and 3): per buffer, the
  // sum of squares of its shard, all-reduced where the members differ.
  SmallVector<std::pair<Value, SmallVector<StringRef>>> normTerms;
  std::vector<std::vector<Value>> gathered; // stage 3: per buffer, group
  unsigned index = 0;
  for (Buffer &buffer : buffers) {
    std::string base = "flat" + std::to_string(index++) + ":" + buffer.unit;
    Operation *lastUpdate = buffer.members.front()->update;
    for (Member *m : buffer.members)
      if (lastUpdate->isBeforeInBlock(m->update))
        lastUpdate = m->update;
    RankedTensorType shard = shardType(buffer);

    // This rank's shard of one value per member that every rank of the
    // axis holds whole: a slice, no communication.
    auto sliceOf = [&](llvm::function_ref<Value(Member *)> valueOf) -> Value {
      SmallVector<Value> values;
      for (Member *m : buffer.members)
        values.push_back(valueOf(m));
      Value whole = flatten(b, loc, values, buffer.length, buffer.padded,
                            buffer.elementType);
      return MeshSliceOp::create(b, loc, shard, whole, meshRef, axisAttr,
                                 b.getI64IntegerAttr(0));
    };

    // The gradient shard.
    Value gradShard;
    if (stage == 1) {
      b.setInsertionPoint(lastUpdate);
      gradShard = sliceOf([](Member *m) -> Value { return m->grad; });
    } else {
      Operation *lastPartial = nullptr;
      for (Member *m : buffer.members) {
        Operation *def =
            (buffer.sliceGrads ? m->unclipped : m->partial).getDefiningOp();
        if (!def) {
          lastPartial = nullptr;
          break;
        }
        if (!lastPartial || lastPartial->isBeforeInBlock(def))
          lastPartial = def;
      }
      // Right after the last gradient: the partial sums die early and the
      // collective can overlap what follows.
      if (lastPartial)
        b.setInsertionPointAfter(lastPartial);
      else
        b.setInsertionPointToStart(&body);
      if (buffer.sliceGrads) {
        // Whole on every rank: a slice of the unclipped gradients.
        gradShard = sliceOf([](Member *m) -> Value { return m->unclipped; });
      } else {
        Type reduceType = elementTypeNamed(context, reduceDtype);
        SmallVector<Value> partials;
        for (Member *m : buffer.members)
          partials.push_back(m->partial);
        Value whole = flatten(b, loc, partials, buffer.length, buffer.padded,
                              buffer.elementType);
        if (reduceType != buffer.elementType)
          whole = ConvertOp::create(
              b, loc, RankedTensorType::get({buffer.padded}, reduceType),
              whole);
        Value reduced = ReduceScatterOp::create(
            b, loc, RankedTensorType::get({buffer.shard}, reduceType), whole,
            meshRef, axisAttr, sum, b.getI64IntegerAttr(0));
        if (!buffer.otherReduceAxes.empty())
          reduced = AllReduceOp::create(
              b, loc, reduced.getType(), reduced, meshRef,
              b.getStrArrayAttr(buffer.otherReduceAxes), sum);
        if (reduceType != buffer.elementType)
          reduced = ConvertOp::create(b, loc, shard, reduced);
        gradShard = reduced;
      }
      Member *first = buffer.members.front();
      if (first->clipScale) {
        auto scalar = RankedTensorType::get({}, buffer.elementType);
        Value sq = MulOp::create(b, loc, gradShard, gradShard);
        Value term = ReduceOp::create(b, loc, scalar, ReductionKind::Sum, sq,
                                      b.getDenseI64ArrayAttr({0}), false);
        if (buffer.elementType != b.getF32Type())
          term = ConvertOp::create(
              b, loc, RankedTensorType::get({}, b.getF32Type()), term);
        SmallVector<StringRef> over = {axis.getValue()};
        llvm::append_range(over, buffer.splitAxes);
        normTerms.push_back({term, over});
        b.setInsertionPoint(lastUpdate);
        Value scale = first->clipScale;
        if (buffer.elementType != b.getF32Type())
          scale = ConvertOp::create(
              b, loc, RankedTensorType::get({}, buffer.elementType), scale);
        gradShard =
            MulOp::create(b, loc, gradShard,
                          BroadcastOp::create(b, loc, shard, scale,
                                              b.getDenseI64ArrayAttr({})));
      }
    }

    // The parameter shard.
    b.setInsertionPoint(lastUpdate);
    Value paramShard;
    if (stage == 3) {
      paramShard = flatArg(buffer, base + ":param", "param", 0);
    } else {
      paramShard = sliceOf([](Member *m) -> Value { return m->param; });
    }
    Operation *model = buffer.members.front()->update;
    SmallVector<Value> operands = {paramShard, gradShard};
    SmallVector<StringRef> momentNames = {"exp_avg", "exp_avg_sq"};
    for (unsigned k = 0; k < buffer.members.front()->moments.size(); ++k)
      operands.push_back(
          flatArg(buffer, base + ":" + momentNames[k].str(), "state", k + 1));
    for (unsigned k = operands.size(); k < model->getNumOperands(); ++k)
      operands.push_back(model->getOperand(k)); // the step count
    OperationState state(loc, model->getName());
    state.addOperands(operands);
    state.addTypes(SmallVector<Type>(model->getNumResults(), shard));
    for (NamedAttribute attr : model->getAttrs())
      if (attr.getName() != RTXDialect::getShardingAttrName())
        state.addAttribute(attr.getName(), attr.getValue());
    b.setInsertionPoint(lastUpdate);
    Operation *update = b.create(state);

    // The new parameters: gathered whole (stages 1 and 2) or kept as a
    // shard (stage 3); the new moments stay shards.
    auto flatResult = [&](Value value, StringRef key, StringRef kind,
                          unsigned which) {
      DictionaryAttr attrs = b.getDictionaryAttr(
          {b.getNamedAttr(RTXDialect::getStateAttrName(), b.getStringAttr(key)),
           b.getNamedAttr(RTXDialect::getFlatAttrName(),
                          layout(buffer, kind, which))});
      newResults.push_back({value.getType(), attrs, value});
    };
    if (stage == 3) {
      flatResult(update->getResult(0), base + ":param", "param", 0);
    } else {
      Value whole = AllGatherOp::create(
          b, loc, RankedTensorType::get({buffer.padded}, buffer.elementType),
          update->getResult(0), meshRef, axisAttr, b.getI64IntegerAttr(0));
      for (auto [m, v] :
           llvm::zip(buffer.members, unflatten(b, loc, whole, buffer)))
        ret->setOperand(m->results[0], v);
    }
    for (unsigned k = 0; k < buffer.members.front()->moments.size(); ++k)
      flatResult(update->getResult(k + 1), base + ":" + momentNames[k].str(),
                 "state", k + 1);
    for (Member *m : buffer.members) {
      for (unsigned k = stage == 3 ? 0 : 1; k < m->results.size(); ++k)
        eraseResults.set(m->results[k]);
      for (BlockArgument moment : m->moments)
        eraseArgs.set(moment.getArgNumber());
      if (stage == 3)
        eraseArgs.set(m->param.getArgNumber());
    }

    // Stage 3: the members' uses read gathered copies, one before the
    // first forward use and (reshard-after-forward) one before the first
    // backward use.
    if (stage == 3) {
      std::vector<Value> groups;
      for (bool inForward : {true, false}) {
        Operation *first = nullptr;
        for (Member *m : buffer.members)
          for (Operation *user : m->param.getUsers()) {
            if (user == m->update ||
                (reshardAfterForward && forward.contains(user) != inForward))
              continue;
            if (!first || user->isBeforeInBlock(first))
              first = user;
          }
        if (!first || (!reshardAfterForward && !inForward))
          continue;
        b.setInsertionPoint(first);
        auto wholeType =
            RankedTensorType::get({buffer.padded}, buffer.elementType);
        Value whole =
            AllGatherOp::create(b, loc, wholeType, paramShard, meshRef,
                                axisAttr, b.getI64IntegerAttr(0));
        SmallVector<Value> copies = unflatten(b, loc, whole, buffer);
        for (size_t k = 0; k < copies.size(); ++k) {
          Member *m = buffer.members[k];
          m->param.replaceUsesWithIf(copies[k], [&](OpOperand &use) {
            Operation *user = use.getOwner();
            return user != m->update && user->getBlock() == &body &&
                   !isa<func::ReturnOp>(user) &&
                   (!reshardAfterForward ||
                    forward.contains(user) == inForward) &&
                   user != whole.getDefiningOp();
          });
        }
        groups.push_back(whole);
      }
      gathered.push_back(std::move(groups));
    }
    if (remarks)
      function.emitRemark()
          << "rtx-shard-state: buffer " << base << ": " << buffer.members.size()
          << " members, " << buffer.length << " elements, padded to "
          << buffer.padded << " (" << buffer.shard << " per rank of " << n
          << ")";
  }

  // The global norm from the shards' terms.
  if (!normTerms.empty()) {
    Operation *sqrt = nullptr;
    function.walk([&](SqrtOp op) {
      if (op->hasAttr(RTXDialect::getGradNormAttrName()))
        sqrt = op;
    });
    if (!sqrt)
      return function.emitError()
             << "rtx-shard-state: the gradients are clipped, but the step "
                "has no rtx.sqrt marked rtx.grad_norm";
    b.setInsertionPoint(sqrt);
    Value total;
    for (auto &[term, over] : normTerms) {
      Value reduced = AllReduceOp::create(b, loc, term.getType(), term, meshRef,
                                          b.getStrArrayAttr(over), sum);
      total =
          total ? AddOp::create(b, loc, total, reduced).getResult() : reduced;
    }
    sqrt->setOperand(0, total);
  }

  // Prefetch: a gather starts where the previous one (in program order)
  // was needed, and is waited for where its own unit needs it.
  if (stage == 3 && prefetch) {
    SmallVector<AllGatherOp> order;
    for (auto &groups : gathered)
      for (Value v : groups)
        order.push_back(v.getDefiningOp<AllGatherOp>());
    llvm::sort(order, [](AllGatherOp a, AllGatherOp c) {
      return a->isBeforeInBlock(c);
    });
    for (size_t k = order.size(); k-- > 1;) {
      AllGatherOp op = order[k];
      // The operand is an argument, defined everywhere.
      b.setInsertionPoint(order[k - 1]);
      auto start = AllGatherStartOp::create(
          b, loc, TokenType::get(context, op.getType()), op.getInput(),
          op.getMeshAttr(), op.getAxesAttr(), op.getGatherDimAttr());
      b.setInsertionPoint(op);
      auto wait = WaitOp::create(b, loc, op.getType(), start);
      op.getResult().replaceAllUsesWith(wait.getResult());
      op->erase();
    }
  }

  for (Member &m : members)
    m.update->dropAllUses(), m.update->erase();

  // The new signature: kept arguments, then the buffers; kept results
  // (with their step indices), then the buffers.
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  for (unsigned i = 0; i < numResults; ++i) {
    if (eraseResults.test(i))
      continue;
    results.push_back(ret.getOperand(i));
    resultAttrs.push_back(function.getResultAttrDict(i)
                              ? Attribute(function.getResultAttrDict(i))
                              : b.getDictionaryAttr({}));
  }
  for (NewValue &r : newResults) {
    results.push_back(r.value);
    resultAttrs.push_back(r.attrs);
  }
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    argAttrs.push_back(function.getArgAttrDict(i));
  for (NewValue &a : newArgs)
    argAttrs.push_back(a.attrs);
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  eraseDead(body);
  function.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  function.setAllArgAttrs(argAttrs);
  function.setAllResultAttrs(resultAttrs);
  llvm::BitVector all(function.getNumArguments());
  for (unsigned i = 0; i < eraseArgs.size(); ++i)
    if (eraseArgs.test(i))
      all.set(i);
  for (unsigned i : all.set_bits())
    if (!body.getArgument(i).use_empty())
      return function.emitError() << "rtx-shard-state: argument " << i
                                  << " is still used after sharding";
  if (failed(function.eraseArguments(all)))
    return failure();
  return success();
}

/// Offload: the flat buffers of optimizer state (and at stage 3 the
/// parameter shards) become references to the tier, read before each use and
/// written back after the update.
LogicalResult RTXShardStatePass::offloadBuffers(func::FuncOp function) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(function.getContext());
  Location loc = function.getLoc();
  StringAttr tier = b.getStringAttr(offload);
  SmallVector<OpOperand *> uses;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto layout = function.getArgAttrOfType<DictionaryAttr>(
        i, RTXDialect::getFlatAttrName());
    auto key = function.getArgAttrOfType<StringAttr>(
        i, RTXDialect::getStateAttrName());
    if (!layout || !key)
      continue;
    for (OpOperand &use : arg.getUses())
      uses.push_back(&use);
    function.setArgAttr(i, RTXDialect::getOffloadAttrName(), tier);
    // The new value goes back as soon as it is computed.
    for (unsigned j = 0; j < function.getNumResults(); ++j) {
      auto resultKey = function.getResultAttrOfType<StringAttr>(
          j, RTXDialect::getStateAttrName());
      if (resultKey != key)
        continue;
      Value value = ret.getOperand(j);
      if (Operation *def = value.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPoint(ret);
      auto store = OffloadStoreOp::create(b, loc, value, arg);
      ret.setOperand(j, store.getResult());
      function.setResultAttr(j, RTXDialect::getOffloadAttrName(), tier);
    }
  }
  if (uses.empty())
    return function.emitError()
           << "rtx-shard-state: offload=" << offload
           << " has nothing to offload: the step keeps no optimizer state "
              "(SGD) and stage "
           << static_cast<int64_t>(stage)
           << " keeps the parameters whole; offload needs AdamW or stage 3";
  // Uses in program order, grouped by the op that reads them. Each group
  // waits just before its op. Among the updates (adjacent at the step's
  // end) a group's reads start where the previous update runs, so the next
  // buffers arrive while this one computes (double buffering, as
  // ZeRO-Offload's optimizer step); other reads (stage 3's gathers) start
  // at their op, so that no fetched buffer waits through the forward or
  // backward pass.
  llvm::stable_sort(uses, [](OpOperand *x, OpOperand *y) {
    return x->getOwner() != y->getOwner() &&
           x->getOwner()->isBeforeInBlock(y->getOwner());
  });
  Operation *previous = nullptr;
  for (size_t k = 0; k < uses.size();) {
    Operation *user = uses[k]->getOwner();
    size_t end = k;
    while (end < uses.size() && uses[end]->getOwner() == user)
      ++end;
    bool overlap = previous && isa<AdamWUpdateOp, SGDUpdateOp>(previous) &&
                   isa<AdamWUpdateOp, SGDUpdateOp>(user);
    b.setInsertionPoint(overlap ? previous : user);
    SmallVector<Value> tokens;
    for (size_t u = k; u < end; ++u) {
      Value buffer = uses[u]->get();
      tokens.push_back(OffloadFetchStartOp::create(
          b, loc, TokenType::get(b.getContext(), buffer.getType()), buffer));
    }
    b.setInsertionPoint(user);
    for (size_t u = k; u < end; ++u)
      uses[u]->set(
          WaitOp::create(b, loc, uses[u]->get().getType(), tokens[u - k])
              .getResult());
    previous = user;
    k = end;
  }
  return success();
}

} // namespace
