//===- Pipeline.cpp - the rtx-pipeline pass -------------------------------===//
//
// Turns a partitioned train step whose ops carry pipeline stages into one
// function per pipeline coordinate that runs a schedule's actions over k
// micro-batches. See Passes.td and docs/pipeline.md.
//
// The ops of the step fall into three kinds:
// - per micro-batch (M): everything computed from the data before the
//   gradients are summed; each runs on its stage, once per micro-batch, in
//   the action (F, B or W) of its phase;
// - weights (P): parameters, constants and what is computed from them
//   alone; copied into each function that uses them, once;
// - after the sums (O): the optimizer and the linear ops between the
//   gradients and it (data-parallel all-reduces, the sum of a tied weight's
//   two gradients), run once per step by every stage that needs them.
// The M values that O ops use are the sums over micro-batches, divided by
// k: exactly the step on the whole batch when every linear op moved to O
// commutes with the sum, which is why only linear ops move.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "MicroBatch.h"

#include "rtx/Analysis/CostModel.h"
#include "rtx/Analysis/PipelineSchedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <set>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPIPELINE
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;
namespace pl = mlir::rtx::pipeline;

namespace {

enum class Kind { Weights, PerMicroBatch, Data, AfterSums };
enum class Phase { Forward, Backward };

/// What the pass knows about the step function before it builds the
/// per-rank functions.
struct StepAnalysis {
  func::FuncOp function;
  llvm::DenseMap<Operation *, Kind> kind;
  llvm::DenseMap<Operation *, int64_t> stage; // M ops
  llvm::DenseMap<Operation *, Phase> phase;   // M ops
  /// Stages that need an op's results (P and O ops, arguments by index).
  llvm::DenseMap<Operation *, std::set<int64_t>> need;
  std::map<unsigned, std::set<int64_t>> argNeed;
  /// Per result of the step: the stages that return it.
  std::vector<std::set<int64_t>> resultOwners;
  /// M ops of each stage in program order.
  std::map<int64_t, SmallVector<Operation *>> stageOps;
  /// Backward ops of a stage that its W action computes (zero-bubble).
  llvm::DenseSet<Operation *> weightGradOps;
  /// M values another stage uses: value -> the stages that use it.
  llvm::MapVector<Value, std::set<int64_t>> crossing;
  /// M values that O ops or the return use: summed over micro-batches.
  llvm::SetVector<Value> sums;
  /// Data arguments (no rtx.state): sliced per micro-batch like inputs.
  llvm::DenseSet<unsigned> dataArgs;
};

bool isData(Value v, const StepAnalysis &a) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return a.dataArgs.contains(arg.getArgNumber());
  return false;
}

/// Linear ops that commute with the sum over micro-batches, and so may run
/// once on the sums instead of once per micro-batch.
bool isLinear(Operation *op, const StepAnalysis &a) {
  if (isa<AddOp, SubOp, ConvertOp, ReshapeOp, NegOp>(op))
    return true;
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    return reduce.getKind() == ReductionKind::Sum;
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    return scatter.getKind() == ReductionKind::Sum;
  if (isa<MulOp>(op))
    return llvm::count_if(op->getOperands(), [&](Value v) {
             Operation *def = v.getDefiningOp();
             return def && a.kind.lookup(def) == Kind::Weights;
           }) == 1;
  return false;
}

std::string describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "'";
  return s;
}

struct RTXPipelinePass : mlir::rtx::impl::RTXPipelineBase<RTXPipelinePass> {
  using RTXPipelineBase::RTXPipelineBase;

  void runOnOperation() override;
  LogicalResult analyze(func::FuncOp function, StepAnalysis &a);
  LogicalResult build(StepAnalysis &a, const pl::Schedule &schedule,
                      MeshOp mesh);
};

} // namespace

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

LogicalResult RTXPipelinePass::analyze(func::FuncOp function,
                                       StepAnalysis &a) {
  a.function = function;
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (BlockArgument arg : body.getArguments())
    if (!function.getArgAttr(arg.getArgNumber(),
                             RTXDialect::getStateAttrName()))
      a.dataArgs.insert(arg.getArgNumber());

  for (BlockArgument arg : body.getArguments())
    if (a.dataArgs.contains(arg.getArgNumber()) &&
        cast<RankedTensorType>(arg.getType()).getRank() == 0)
      return function.emitError()
             << "argument " << arg.getArgNumber()
             << " is a scalar: there is no batch dimension to split into "
                "micro-batches";
  for (InputOp input : body.getOps<InputOp>())
    if (input.getType().getRank() == 0)
      return input.emitError() << "input \"" << input.getName()
                               << "\" is a scalar: there is no batch "
                                  "dimension to split into micro-batches";
  auto stageAttr = [](Operation *op) {
    return op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName());
  };
  // Kinds, in program order.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  auto kindOfValue = [&](Value v) {
    if (isData(v, a))
      return Kind::Data;
    if (isa<BlockArgument>(v))
      return Kind::Weights;
    return a.kind.lookup(v.getDefiningOp());
  };
  for (Operation *op : ops) {
    Kind k = Kind::Weights;
    if (isa<InputOp>(op))
      k = Kind::Data;
    else if (isa<AdamWUpdateOp, SGDUpdateOp>(op))
      k = Kind::AfterSums;
    for (Value operand : op->getOperands()) {
      Kind o = kindOfValue(operand);
      if (o == Kind::AfterSums)
        k = Kind::AfterSums;
      else if ((o == Kind::PerMicroBatch || o == Kind::Data) &&
               k != Kind::AfterSums)
        k = Kind::PerMicroBatch;
    }
    // Computed from data alone, without a stage: a copy per micro-batch
    // wherever it is used (a mask, a shifted label).
    if (k == Kind::PerMicroBatch && !stageAttr(op) &&
        llvm::all_of(op->getOperands(), [&](Value v) {
          return kindOfValue(v) != Kind::PerMicroBatch;
        }))
      k = Kind::Data;
    a.kind[op] = k;
  }
  // The linear ops whose results only the optimizer (or the return) uses
  // move after the sums, last first.
  for (Operation *op : llvm::reverse(ops)) {
    if (a.kind[op] != Kind::PerMicroBatch || !isLinear(op, a))
      continue;
    bool onlyAfter = !op->use_empty() &&
                     llvm::all_of(op->getUsers(), [&](Operation *user) {
                       return isa<func::ReturnOp>(user) ||
                              a.kind.lookup(user) == Kind::AfterSums;
                     });
    // The loss stays where it is computed; its all-reduce may move.
    if (onlyAfter)
      a.kind[op] = Kind::AfterSums;
  }
  // Stages and phases of the M ops.
  for (Operation *op : ops) {
    if (a.kind[op] != Kind::PerMicroBatch)
      continue;
    std::set<int64_t> from;
    bool backward = op->hasAttr(RTXDialect::getBackwardAttrName());
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || a.kind.lookup(def) != Kind::PerMicroBatch)
        continue;
      from.insert(a.stage[def]);
      backward = backward || a.phase[def] == Phase::Backward;
    }
    int64_t s;
    if (IntegerAttr tagged = stageAttr(op)) {
      s = tagged.getInt();
    } else if (from.size() == 1) {
      s = *from.begin();
    } else {
      InFlightDiagnostic d = op->emitError()
                             << describeOp(op)
                             << " combines tensors of pipeline stages";
      for (int64_t f : from)
        d << " " << f;
      d << " within a micro-batch; only linear ops on gradients may, after "
           "the micro-batches (gradient clipping with pipelines is not "
           "supported yet)";
      return failure();
    }
    a.stage[op] = s;
    a.phase[op] = backward ? Phase::Backward : Phase::Forward;
    a.stageOps[s].push_back(op);
  }
  // Crossings and sums.
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || a.kind.lookup(def) != Kind::PerMicroBatch)
        continue;
      if (a.kind[op] == Kind::AfterSums)
        a.sums.insert(operand);
      else if (a.kind[op] == Kind::PerMicroBatch && a.stage[op] != a.stage[def])
        a.crossing[operand].insert(a.stage[op]);
    }
  }
  for (Value v : ret.getOperands())
    if (Operation *def = v.getDefiningOp())
      if (a.kind.lookup(def) == Kind::PerMicroBatch)
        a.sums.insert(v);
  for (auto &[value, users] : a.crossing) {
    Operation *def = value.getDefiningOp();
    for (int64_t user : users) {
      bool forward = a.phase[def] == Phase::Forward;
      if (forward ? user < a.stage[def] : user > a.stage[def])
        return def->emitError()
               << describeOp(def) << " of stage " << a.stage[def]
               << " is used by stage " << user
               << (forward ? ": a forward tensor can only go to later stages"
                           : ": a gradient can only go to earlier stages");
    }
  }

  // Which stages need what: M ops their own stage; the step's results the
  // stages that use the state they carry; P and O ops the stages of their
  // users; to a fixed point, since state is used and produced by O ops.
  int64_t numResults = ret.getNumOperands();
  a.resultOwners.assign(numResults, {});
  DenseMap<StringAttr, unsigned> argOfState;
  for (BlockArgument arg : body.getArguments())
    if (auto key = function.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), RTXDialect::getStateAttrName()))
      argOfState[key] = arg.getArgNumber();
  auto usersNeed = [&](Value v, std::set<int64_t> &into) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user)) {
        const auto &owners = a.resultOwners[use.getOperandNumber()];
        into.insert(owners.begin(), owners.end());
      } else if (a.kind.lookup(user) == Kind::PerMicroBatch) {
        into.insert(a.stage[user]);
      } else {
        const auto &n = a.need[user];
        into.insert(n.begin(), n.end());
      }
    }
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned i = 0; i < numResults; ++i) {
      std::set<int64_t> owners = a.resultOwners[i];
      Value v = ret.getOperand(i);
      if (Operation *def = v.getDefiningOp();
          def && a.kind.lookup(def) == Kind::PerMicroBatch)
        owners.insert(a.stage[def]);
      if (auto key = function.getResultAttrOfType<StringAttr>(
              i, RTXDialect::getStateAttrName()))
        if (auto it = argOfState.find(key); it != argOfState.end()) {
          const auto &n = a.argNeed[it->second];
          owners.insert(n.begin(), n.end());
        }
      if (owners != a.resultOwners[i]) {
        a.resultOwners[i] = owners;
        changed = true;
      }
    }
    for (Operation *op : llvm::reverse(ops)) {
      if (a.kind[op] == Kind::PerMicroBatch)
        continue;
      std::set<int64_t> n = a.need[op];
      for (Value result : op->getResults())
        usersNeed(result, n);
      if (n != a.need[op]) {
        a.need[op] = n;
        changed = true;
      }
    }
    for (BlockArgument arg : body.getArguments()) {
      std::set<int64_t> n = a.argNeed[arg.getArgNumber()];
      usersNeed(arg, n);
      if (n != a.argNeed[arg.getArgNumber()]) {
        a.argNeed[arg.getArgNumber()] = n;
        changed = true;
      }
    }
  }
  // A result that carries no state (the loss) is returned by the stages
  // whose micro-batch ops it is computed from; one nobody needs (state
  // that nothing reads) by stage 0.
  for (auto [i, owners] : llvm::enumerate(a.resultOwners)) {
    if (!owners.empty())
      continue;
    SmallVector<Value> work = {ret.getOperand(i)};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || !seen.insert(v).second)
        continue;
      if (a.kind.lookup(def) == Kind::PerMicroBatch) {
        owners.insert(a.stage[def]);
        continue;
      }
      work.append(def->operand_begin(), def->operand_end());
    }
    if (owners.empty())
      owners.insert(0);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Building the functions
//===----------------------------------------------------------------------===//

namespace {
/// Builds the function of one pipeline coordinate.
class RankBuilder {
public:
  RankBuilder(StepAnalysis &a, const pl::Schedule &schedule, MeshOp mesh,
              StringRef axis, int64_t rank, func::FuncOp target)
      : a(a), schedule(schedule), rank(rank), k(schedule.microBatches),
        target(target), b(target.getContext()),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        axes(b.getStrArrayAttr({axis})) {
    Block *entry = target.addEntryBlock();
    b.setInsertionPointToEnd(entry);
    source = a.function;
    for (const pl::Action &action : schedule.actions[rank])
      if (action.kind == pl::ActionKind::Weight)
        splitStages.insert(action.stage);
    for (auto [id, entry] : llvm::enumerate(a.crossing))
      crossingId[entry.first] = id;
    for (auto [id, v] : llvm::enumerate(a.sums))
      sumId[v] = id;
  }

  LogicalResult run();

private:
  Location loc() { return source.getLoc(); }
  bool mine(int64_t stage) const { return stage % schedule.ranks == rank; }
  bool mineAny(const std::set<int64_t> &stages) const {
    return llvm::any_of(stages, [&](int64_t s) { return mine(s); });
  }
  int64_t rankOf(int64_t stage) const { return stage % schedule.ranks; }

  /// Tags: one per crossing value and micro-batch, then one per sum.
  int64_t crossTag(Value v, int64_t m) {
    return crossingId[v] * k + m;
  }
  int64_t sumTag(Value v) {
    return int64_t(a.crossing.size()) * k + sumId[v];
  }

  /// A new argument of the function for the step's argument `index`.
  Value argument(unsigned index) {
    auto it = args.find(index);
    if (it != args.end())
      return it->second;
    Block &entry = target.getBody().front();
    Type type = source.getArgument(index).getType();
    bool data = a.dataArgs.contains(index);
    if (data)
      type = growBatch(type, k);
    Value arg = entry.addArgument(type, source.getLoc());
    argAttrs.push_back(source.getArgAttrDict(index));
    args[index] = arg;
    return arg;
  }

  /// The value of `v` for an op of `stage` on micro-batch `m` (-1: after
  /// the micro-batches).
  FailureOr<Value> lookup(Value v, int64_t stage, int64_t m) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Value whole = argument(arg.getArgNumber());
      if (!a.dataArgs.contains(arg.getArgNumber()))
        return whole;
      return microBatchOf(v, whole, m);
    }
    Operation *def = v.getDefiningOp();
    unsigned index = cast<OpResult>(v).getResultNumber();
    switch (a.kind.lookup(def)) {
    case Kind::Weights: {
      if (!weights.contains(def)) {
        FailureOr<Operation *> clone = cloneWith(def, stage, -1);
        if (failed(clone))
          return failure();
        weights[def] = *clone;
      }
      return weights[def]->getResult(index);
    }
    case Kind::Data: {
      if (auto input = dyn_cast<InputOp>(def)) {
        if (!inputs.contains(def)) {
          Operation *clone = b.clone(*def);
          clone->getResult(0).setType(growBatch(input.getType(), k));
          inputs[def] = clone;
        }
        return microBatchOf(v, inputs[def]->getResult(0), m);
      }
      auto key = std::make_pair(def, m);
      if (!dataOps.count(key)) {
        FailureOr<Operation *> clone = cloneWith(def, stage, m);
        if (failed(clone))
          return failure();
        dataOps[key] = *clone;
      }
      return dataOps[key]->getResult(index);
    }
    case Kind::PerMicroBatch: {
      if (m < 0) {
        // After the micro-batches: the mean over them.
        auto it = means.find(v);
        if (it != means.end())
          return it->second;
        return def->emitError() << "internal: the sum of " << describeOp(def)
                                << " is used before its stage reduced it";
      }
      auto it = values.find({v, m, stage});
      if (it != values.end())
        return it->second;
      return def->emitError()
             << "internal: " << describeOp(def) << " of stage "
             << a.stage[def] << " on micro-batch " << m
             << " is used by stage " << stage << " before it is there";
    }
    case Kind::AfterSums: {
      if (!after.contains(def)) {
        FailureOr<Operation *> clone = cloneWith(def, stage, -1);
        if (failed(clone))
          return failure();
        after[def] = *clone;
      }
      return after[def]->getResult(index);
    }
    }
    llvm_unreachable("unknown kind");
  }

  Value microBatchOf(Value original, Value whole, int64_t m) {
    auto key = std::make_pair(original.getAsOpaquePointer(), m);
    auto it = slices.find(key);
    if (it != slices.end())
      return it->second;
    auto micro = cast<RankedTensorType>(original.getType());
    Value slice = sliceMicroBatch(b, loc(), whole, m, k, micro);
    slices[key] = slice;
    return slice;
  }

  FailureOr<Operation *> cloneWith(Operation *op, int64_t stage, int64_t m) {
    IRMapping mapping;
    for (Value operand : op->getOperands()) {
      FailureOr<Value> value = lookup(operand, stage, m);
      if (failed(value))
        return failure();
      mapping.map(operand, *value);
    }
    Operation *clone = b.clone(*op, mapping);
    clone->removeAttr(RTXDialect::getStageAttrName());
    clone->removeAttr(RTXDialect::getBackwardAttrName());
    return clone;
  }

  /// Runs the M ops of `stage` of one phase (or the W part) on `m`.
  LogicalResult compute(int64_t stage, int64_t m, Phase phase,
                        bool weightPart) {
    for (Operation *op : a.stageOps[stage]) {
      if (a.phase[op] != phase)
        continue;
      if (phase == Phase::Backward && splitStages.count(stage) &&
          a.weightGradOps.contains(op) != weightPart)
        continue;
      FailureOr<Operation *> clone = cloneWith(op, stage, m);
      if (failed(clone))
        return failure();
      for (auto [original, result] :
           llvm::zip(op->getResults(), (*clone)->getResults())) {
        values[{original, m, stage}] = result;
        if (a.sums.contains(original)) {
          auto it = running.find(original);
          running[original] =
              it == running.end()
                  ? Value(result)
                  : Value(AddOp::create(b, loc(), it->second, result));
        }
      }
    }
    return success();
  }

  /// The tensors `stage` sends on `m` in the given phase.
  void send(int64_t stage, int64_t m, Phase phase) {
    for (auto &[value, users] : a.crossing) {
      Operation *def = value.getDefiningOp();
      if (a.stage[def] != stage || a.phase[def] != phase)
        continue;
      Value local = values[{value, m, stage}];
      for (int64_t user : users) {
        if (mine(user)) {
          values[{value, m, user}] = local;
          continue;
        }
        sendTo(local, rankOf(user), crossTag(value, m));
      }
    }
  }

  void sendTo(Value local, int64_t peer, int64_t tag) {
    auto token = SendStartOp::create(
        b, loc(), TokenType::get(b.getContext(), Type()), local, meshRef,
        axes, b.getI64IntegerAttr(peer), b.getI64IntegerAttr(tag));
    sends.push_back(token.getToken());
  }

  Value recvFrom(Type type, int64_t peer, int64_t tag) {
    return RecvOp::create(b, loc(), type, meshRef, axes,
                          b.getI64IntegerAttr(peer), b.getI64IntegerAttr(tag))
        .getResult();
  }

  /// The tensors `stage` receives on `m` in the given phase.
  void receive(int64_t stage, int64_t m, Phase phase) {
    for (auto &[value, users] : a.crossing) {
      Operation *def = value.getDefiningOp();
      int64_t from = a.stage[def];
      if (a.phase[def] != phase || !users.count(stage) || mine(from))
        continue;
      values[{value, m, stage}] =
          recvFrom(value.getType(), rankOf(from), crossTag(value, m));
    }
  }

  /// Ends the sums of `stage`: divides them by k and sends the ones other
  /// ranks' optimizer steps need.
  LogicalResult reduce(int64_t stage) {
    for (Value v : a.sums) {
      if (a.stage[v.getDefiningOp()] != stage)
        continue;
      auto it = running.find(v);
      if (it == running.end())
        return v.getDefiningOp()->emitError()
               << "internal: no micro-batch computed " << describeOp(
                      v.getDefiningOp())
               << " before stage " << stage << "'s gradient reduction";
      auto type = cast<RankedTensorType>(v.getType());
      Value scale = ConstantOp::create(
          b, loc(),
          DenseElementsAttr::get(
              type, b.getFloatAttr(type.getElementType(), 1.0 / double(k))));
      Value mean = MulOp::create(b, loc(), it->second, scale);
      means[v] = mean;
      std::set<int64_t> peers;
      for (Operation *user : v.getUsers())
        if (a.kind.lookup(user) == Kind::AfterSums)
          for (int64_t s : a.need[user])
            if (!mine(s))
              peers.insert(rankOf(s));
      for (int64_t peer : peers)
        sendTo(mean, peer, sumTag(v));
    }
    return success();
  }

  /// The optimizer step: the sums other ranks reduced, then the results
  /// this rank's stages own.
  LogicalResult optimize() {
    for (Value v : a.sums) {
      int64_t from = a.stage[v.getDefiningOp()];
      if (mine(from) || means.count(v))
        continue;
      bool needed = llvm::any_of(v.getUsers(), [&](Operation *user) {
        return a.kind.lookup(user) == Kind::AfterSums &&
               mineAny(a.need[user]);
      });
      if (needed)
        means[v] = recvFrom(v.getType(), rankOf(from), sumTag(v));
    }
    auto ret = cast<func::ReturnOp>(
        source.getBody().front().getTerminator());
    for (auto [i, owners] : llvm::enumerate(a.resultOwners)) {
      if (!mineAny(owners))
        continue;
      int64_t stage = *llvm::find_if(owners, [&](int64_t s) { return mine(s); });
      FailureOr<Value> value = lookup(ret.getOperand(i), stage, -1);
      if (failed(value))
        return failure();
      results.push_back(*value);
      SmallVector<NamedAttribute> attrs;
      if (DictionaryAttr dict = source.getResultAttrDict(i))
        attrs.append(dict.begin(), dict.end());
      attrs.push_back(b.getNamedAttr(RTXDialect::getStepResultAttrName(),
                                     b.getI64IntegerAttr(i)));
      resultAttrs.push_back(b.getDictionaryAttr(attrs));
    }
    return success();
  }

  StepAnalysis &a;
  const pl::Schedule &schedule;
  int64_t rank, k;
  func::FuncOp target, source;
  OpBuilder b;
  FlatSymbolRefAttr meshRef;
  ArrayAttr axes;
  std::set<int64_t> splitStages;
  llvm::DenseMap<Value, int64_t> crossingId, sumId;

  std::map<unsigned, Value> args;
  SmallVector<DictionaryAttr> argAttrs;
  llvm::DenseMap<Operation *, Operation *> weights, inputs, after;
  std::map<std::pair<Operation *, int64_t>, Operation *> dataOps;
  std::map<std::pair<void *, int64_t>, Value> slices;
  struct Key {
    Value value;
    int64_t m, stage;
    bool operator<(const Key &o) const {
      return std::make_tuple(value.getAsOpaquePointer(), m, stage) <
             std::make_tuple(o.value.getAsOpaquePointer(), o.m, o.stage);
    }
  };
  std::map<Key, Value> values;
  llvm::DenseMap<Value, Value> running, means;
  SmallVector<Value> sends, results;
  SmallVector<Attribute> resultAttrs;
};
} // namespace

LogicalResult RankBuilder::run() {
  using K = pl::ActionKind;
  Block &body = target.getBody().front();
  for (const pl::Action &action : schedule.actions[rank]) {
    // The ops this action makes carry its name, for traces.
    Operation *before = body.empty() ? nullptr : &body.back();
    llvm::scope_exit tag([&] {
      StringAttr name = b.getStringAttr(action.str());
      for (Operation *op = before ? before->getNextNode() : &body.front(); op;
           op = op->getNextNode())
        op->setAttr(RTXDialect::getActionAttrName(), name);
    });
    LogicalResult ok = success();
    switch (action.kind) {
    case K::Forward:
      ok = compute(action.stage, action.microBatch, Phase::Forward, false);
      break;
    case K::Backward:
      ok = compute(action.stage, action.microBatch, Phase::Backward, false);
      break;
    case K::Weight:
      ok = compute(action.stage, action.microBatch, Phase::Backward, true);
      break;
    case K::SendForward:
      send(action.stage, action.microBatch, Phase::Forward);
      break;
    case K::SendBackward:
      send(action.stage, action.microBatch, Phase::Backward);
      break;
    case K::RecvForward:
      receive(action.stage, action.microBatch, Phase::Forward);
      break;
    case K::RecvBackward:
      receive(action.stage, action.microBatch, Phase::Backward);
      break;
    case K::ReduceGrad:
      ok = reduce(action.stage);
      break;
    case K::Optimizer:
      ok = optimize();
      break;
    }
    if (failed(ok))
      return failure();
  }
  for (Value token : sends)
    WaitOp::create(b, loc(), Type(), token);
  func::ReturnOp::create(b, loc(), results);
  Block &entry = body;
  target.setFunctionType(b.getFunctionType(
      entry.getArgumentTypes(), ValueRange(results).getTypes()));
  for (auto [i, dict] : llvm::enumerate(argAttrs))
    if (dict)
      target.setArgAttrs(i, dict);
  for (auto [i, dict] : llvm::enumerate(resultAttrs))
    target.setResultAttrs(i, cast<DictionaryAttr>(dict));
  return success();
}

/// The backward ops of each stage whose results the previous stage does not
/// need: zero-bubble's W part (the rest is B, the input gradient). The first
/// stage sends no gradient back, so nothing would be B and every W would
/// wait for the end: there B is the first half of the backward (by
/// balanceCost), a prefix in program order, which is closed under
/// dependences.
static void splitWeightGradients(StepAnalysis &a) {
  for (auto &[stage, ops] : a.stageOps) {
    llvm::DenseSet<Operation *> inputGrad;
    SmallVector<Operation *> backward;
    for (Operation *op : llvm::reverse(ops)) {
      if (a.phase[op] != Phase::Backward)
        continue;
      backward.push_back(op);
      bool needed = llvm::any_of(op->getResults(), [&](Value v) {
        if (a.crossing.count(v))
          return true;
        return llvm::any_of(v.getUsers(), [&](Operation *user) {
          return inputGrad.contains(user);
        });
      });
      if (needed)
        inputGrad.insert(op);
    }
    std::reverse(backward.begin(), backward.end());
    if (inputGrad.empty()) {
      int64_t total = 0, prefix = 0;
      for (Operation *op : backward)
        total += balanceCost(op);
      for (Operation *op : backward) {
        if (2 * prefix >= total)
          break;
        prefix += balanceCost(op);
        inputGrad.insert(op);
      }
    }
    for (Operation *op : backward)
      if (!inputGrad.contains(op))
        a.weightGradOps.insert(op);
  }
}

LogicalResult RTXPipelinePass::build(StepAnalysis &a,
                                     const pl::Schedule &schedule,
                                     MeshOp mesh) {
  splitWeightGradients(a);
  ModuleOp module = getOperation();
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(a.function);
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    std::string name =
        (a.function.getSymName() + "_" + axis + std::to_string(r)).str();
    auto target = func::FuncOp::create(b, a.function.getLoc(), name,
                                       b.getFunctionType({}, {}));
    for (NamedAttribute attr : a.function->getDiscardableAttrs())
      target->setAttr(attr.getName(), attr.getValue());
    target->setAttr(RTXDialect::getPipelineRankAttrName(),
                    b.getI64IntegerAttr(r));
    target->setAttr(RTXDialect::getPipelineAxisAttrName(),
                    b.getStringAttr(axis));
    SmallVector<Attribute> lines;
    std::string text = schedule.str();
    SmallVector<StringRef> split;
    StringRef(text).split(split, '\n', -1, /*KeepEmpty=*/false);
    for (StringRef line : split)
      lines.push_back(b.getStringAttr(line));
    target->setAttr("rtx.pipeline_schedule", b.getArrayAttr(lines));
    if (schedule.stagesPerRank > 1)
      target->setAttr("rtx.virtual_stages",
                      b.getI64IntegerAttr(schedule.stagesPerRank));
    b.setInsertionPointAfter(target);
    RankBuilder builder(a, schedule, mesh, axis, r, target);
    if (failed(builder.run()))
      return failure();
  }
  a.function.erase();
  return success();
}

void RTXPipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<func::FuncOp> staged;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && !function->hasAttr(RTXDialect::getPipelineRankAttrName())) {
      bool any = false;
      function.walk([&](Operation *op) {
        any = any || op->hasAttr(RTXDialect::getStageAttrName());
      });
      if (any)
        staged.push_back(function);
    }
  if (staged.empty()) {
    module.emitError() << "rtx-pipeline: no op has an 'rtx.stage'; run "
                          "rtx-split-stages before rtx-autodiff (in "
                          "rtx-distribute: a mesh with a pp axis)";
    return signalPassFailure();
  }
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1) {
    module.emitError() << "rtx-pipeline needs exactly one rtx.mesh, the "
                          "module has "
                       << meshes.size();
    return signalPassFailure();
  }
  MeshOp mesh = meshes.front();
  std::optional<int64_t> ranks = mesh.getAxisSize(axis);
  if (!ranks) {
    mesh.emitError() << "rtx-pipeline: mesh @" << mesh.getSymName()
                     << " has no axis \"" << axis << "\"";
    return signalPassFailure();
  }
  if (virtualStages < 1) {
    module.emitError() << "rtx-pipeline: virtual=" << int64_t(virtualStages)
                       << " must be at least 1";
    return signalPassFailure();
  }
  int64_t k = microBatches == 0 ? *ranks : int64_t(microBatches);
  if (k < 1) {
    module.emitError() << "rtx-pipeline: micro-batches=" << k
                       << " must be at least 1 (0: one per pipeline rank)";
    return signalPassFailure();
  }
  for (func::FuncOp function : staged) {
    StepAnalysis a;
    if (failed(analyze(function, a)))
      return signalPassFailure();
    int64_t stages = a.stageOps.empty() ? 0 : a.stageOps.rbegin()->first + 1;
    int64_t expected = *ranks * virtualStages;
    if (stages != expected) {
      function.emitError() << "the function has " << stages
                           << " pipeline stages, but axis \"" << axis
                           << "\" of size " << *ranks << " with virtual="
                           << int64_t(virtualStages) << " runs " << expected;
      return signalPassFailure();
    }
    // The schedule: generated, or read from a file.
    std::optional<pl::Schedule> plan;
    if (!scheduleFile.empty()) {
      auto buffer = llvm::MemoryBuffer::getFile(scheduleFile);
      if (!buffer) {
        function.emitError() << "cannot read schedule-file " << scheduleFile
                             << ": " << buffer.getError().message();
        return signalPassFailure();
      }
      pl::ParseResult parsed = pl::parseSchedule(
          (*buffer)->getBuffer().str(), virtualStages);
      for (const pl::Diagnostic &d : parsed.errors)
        function.emitError() << scheduleFile << ": " << d.str();
      if (!parsed.schedule)
        return signalPassFailure();
      plan = parsed.schedule;
      if (plan->ranks != *ranks || plan->microBatches != k) {
        function.emitError()
            << scheduleFile << " schedules " << plan->ranks
            << " ranks and " << plan->microBatches
            << " micro-batches, the pipeline has " << *ranks << " and " << k;
        return signalPassFailure();
      }
    } else {
      std::optional<pl::ScheduleKind> kind =
          pl::parseScheduleKind(this->schedule);
      if (!kind) {
        function.emitError() << "rtx-pipeline: unknown schedule '"
                             << std::string(this->schedule)
                             << "' (gpipe, 1f1b, interleaved, zb-h1)";
        return signalPassFailure();
      }
      pl::GenerateResult generated =
          pl::generateSchedule(*kind, *ranks, k, virtualStages);
      if (!generated.schedule) {
        function.emitError() << generated.error;
        return signalPassFailure();
      }
      plan = generated.schedule;
    }
    std::vector<pl::Diagnostic> errors = pl::simulate(*plan).errors;
    for (const pl::Diagnostic &d : errors)
      function.emitError() << d.str();
    if (!errors.empty())
      return signalPassFailure();
    if (failed(build(a, *plan, mesh)))
      return signalPassFailure();
  }
}
