//===- ProbeCosts.cpp - the costs of probe programs, combined -------------===//
//
// See ProbeCosts.h.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/ProbeCosts.h"

#include "rtx/Analysis/ActivationMemory.h"
#include "rtx/Analysis/ShardUnit.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::planner;

SmallVector<Operation *>
planner::forwardComputingOps(func::FuncOp function) {
  SmallVector<Operation *> computing;
  llvm::DenseSet<Operation *> fromWeights;
  for (Operation &op : function.getBody().front().without_terminator()) {
    if (isa<InputOp>(op))
      continue;
    bool weightsOnly = isa<ParamOp, ConstantOp>(op) ||
                       llvm::all_of(op.getOperands(), [&](Value v) {
                         Operation *def = v.getDefiningOp();
                         return def && fromWeights.contains(def);
                       });
    if (weightsOnly)
      fromWeights.insert(&op);
    else
      computing.push_back(&op);
  }
  return computing;
}

static CommPattern patternOf(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return CommPattern::AllReduce;
  case CollectiveKind::ReduceScatter:
    return CommPattern::ReduceScatter;
  case CollectiveKind::Permute:
    return CommPattern::SendRecv;
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
  case CollectiveKind::BroadcastFrom:
    return CommPattern::AllGather;
  }
  return CommPattern::AllReduce;
}

static std::string locationOf(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->getLoc().print(os);
  return text;
}

ProbeProgram planner::readProbe(func::FuncOp function, int64_t units,
                                llvm::StringRef axis) {
  ProbeProgram probe;
  probe.units.resize(units);
  auto stageOf = [](Operation *op) -> int64_t {
    auto stage =
        op->getAttrOfType<IntegerAttr>(RTXDialect::getStageAttrName());
    return stage ? stage.getInt() : -1;
  };
  auto isBackward = [](Operation *op) { return op->hasAttr("rtx.backward"); };

  // The unit and phase of the last staged op: where a collective that the
  // partitioner inserted (without a stage) belongs.
  int64_t currentUnit = -1;
  bool currentBackward = false;
  Block &body = function.getBody().front();
  // Ops the partitioner created carry no stage; between the first and the
  // last staged op they belong to the unit and phase of the op before
  // them. Before the first (copies of parameters) and after the last (the
  // optimizer step), they are per-step work.
  Operation *lastStaged = nullptr;
  for (Operation &op : body.without_terminator())
    if (stageOf(&op) >= 0)
      lastStaged = &op;
  // What rtx-recompute=full computes again (Recompute.cpp): each forward
  // value a backward op reads, and what it is computed from, up to the
  // values kept, those that leave their unit for a later one (the layer
  // boundaries the pass keeps).
  llvm::DenseSet<Operation *> recomputedWhenFull;
  {
    auto isForward = [&](Operation *op) {
      return op && stageOf(op) >= 0 && !isBackward(op) &&
             !isa<ParamOp, InputOp, ConstantOp>(op);
    };
    auto kept = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        return !isBackward(user) && stageOf(user) > stageOf(v.getDefiningOp());
      });
    };
    SmallVector<Value> needed;
    for (Operation &op : body.without_terminator())
      if (isBackward(&op))
        needed.append(op.operand_begin(), op.operand_end());
    while (!needed.empty()) {
      Value v = needed.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!isForward(def) || kept(v) || !recomputedWhenFull.insert(def).second)
        continue;
      needed.append(def->operand_begin(), def->operand_end());
    }
  }
  bool pastLast = false;
  for (Operation &op : body.without_terminator()) {
    if (&op == lastStaged)
      pastLast = true;
    if (auto input = dyn_cast<InputOp>(op)) {
      auto type = cast<RankedTensorType>(input.getType());
      if (probe.modelBatch == 1 && type.getRank() >= 1) {
        probe.modelBatch = type.getDimSize(0);
        probe.sequenceLength = type.getRank() >= 2 ? type.getDimSize(1) : 1;
      }
      continue;
    }
    int64_t unit = stageOf(&op);
    if (unit >= units)
      unit = units - 1;
    bool backward = isBackward(&op);
    if (unit >= 0) {
      currentUnit = unit;
      currentBackward = backward;
    } else if (currentUnit >= 0 && (!pastLast || &op == lastStaged) &&
               !isa<AdamWUpdateOp, SGDUpdateOp>(op)) {
      unit = currentUnit;
      backward = currentBackward;
    }
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      auto axes = op.getAttrOfType<ArrayAttr>("axes");
      bool over = axes && llvm::any_of(axes, [&](Attribute a) {
                    return cast<StringAttr>(a).getValue() == axis;
                  });
      if (!over)
        continue;
      ProbeComm comm;
      comm.kind = patternOf(collective.getCollectiveKind());
      Value operand = op.getOperand(0);
      comm.bytes = double(tensorBytes(operand.getType()));
      if (comm.kind == CommPattern::AllGather && op.getNumResults() > 0)
        comm.bytes = double(tensorBytes(op.getResult(0).getType()));
      // Activations lead with the batch; a gathered weight does not grow
      // with the micro-batch.
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      comm.batch = type && type.getRank() >= 2 &&
                   type.getDimSize(0) == probe.modelBatch;
      if (unit >= 0) {
        ProbeUnit &u = probe.units[unit];
        (backward ? u.backwardComm : u.forwardComm).push_back(comm);
      } else {
        probe.optimizerComm.push_back(comm);
      }
      continue;
    }
    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost)
      continue;
    ProbeOp p;
    p.name = op.getName().getStringRef().str();
    p.flops = double(cost.getFlops());
    p.bytes = double(cost.getBytesAccessed());
    // A view (rtx.reshape) moves nothing: the runtime returns the operand's
    // buffer, so it costs the per-op overhead only.
    if (isa<ViewLikeOpInterface>(op))
      p.bytes = 0;
    p.mnk = cost.getContractionShape();
    p.transposedLhs = !p.mnk.empty() && cost.isContractionLhsTransposed();
    if (op.getNumResults() > 0)
      if (auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType()))
        p.shape.assign(type.getShape().begin(), type.getShape().end());
    p.cheapToRecompute = isCheapToRecompute(&op);
    p.recomputedWhenFull = recomputedWhenFull.contains(&op);
    if (!p.mnk.empty() && probe.dtype == "f32") {
      Type element =
          cast<RankedTensorType>(op.getOperand(0).getType()).getElementType();
      std::string name;
      llvm::raw_string_ostream os(name);
      element.print(os);
      probe.dtype = name;
    }
    if (unit < 0) {
      probe.optimizer.push_back(std::move(p));
      continue;
    }
    ProbeUnit &u = probe.units[unit];
    if (u.location.empty())
      u.location = locationOf(&op);
    if (!backward) {
      // Saved for the backward pass, and leaving the unit.
      for (Value result : op.getResults()) {
        double bytes = double(tensorBytes(result.getType()));
        bool saved = false, leaves = false;
        for (Operation *user : result.getUsers()) {
          if (isBackward(user))
            saved = true;
          else if (stageOf(user) > unit)
            leaves = true;
        }
        if (saved) {
          u.savedBytes += bytes;
          if (!p.cheapToRecompute)
            u.savedSelectiveBytes += bytes;
        }
        if (leaves)
          u.boundaryBytes += bytes;
      }
      u.forward.push_back(std::move(p));
    } else {
      u.backward.push_back(std::move(p));
    }
  }

  // Parameters: their unit is that of their first staged user; the state
  // keys "NAME:param" are matched to them by the part after ':'.
  std::map<std::string, double> stateBytes;
  for (BlockArgument arg : function.getArguments()) {
    double bytes = double(tensorBytes(arg.getType()));
    if (auto name = function.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), RTXDialect::getParamAttrName())) {
      ProbeProgram::Param &param = probe.params[name.getValue().str()];
      param.bytes = bytes;
      if (auto type = dyn_cast<RankedTensorType>(arg.getType()))
        param.elements = type.getNumElements();
      // Through unstaged ops computed from the parameter alone (the bf16
      // copy of a mixed-precision master, a transpose).
      int64_t unit = units;
      SmallVector<Value> frontier = {arg};
      for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
        SmallVector<Value> next;
        for (Value v : frontier)
          for (Operation *user : v.getUsers()) {
            if (stageOf(user) >= 0)
              unit = std::min(unit, stageOf(user));
            else if (!isa<AdamWUpdateOp, SGDUpdateOp>(user))
              next.append(user->result_begin(), user->result_end());
          }
        if (unit < units)
          break;
        frontier = std::move(next);
      }
      param.unit = unit < units ? unit : 0;
      continue;
    }
    if (auto key = function.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), RTXDialect::getStateAttrName())) {
      auto [kind, name] = key.getValue().split(':');
      if (!name.empty() && kind != "param")
        stateBytes[name.str()] += bytes;
    }
  }
  for (auto &[name, bytes] : stateBytes) {
    auto it = probe.params.find(name);
    if (it != probe.params.end())
      it->second.stateBytes += bytes;
  }
  return probe;
}

namespace {
/// Pairs ops of two programs by name, in order: each op of `b` is matched
/// to the next op of `a` with its name; ops the partitioner added to `b`
/// stay unmatched. Returns, for each op of `a`, its partner in `b` or -1.
std::vector<int64_t> align(const std::vector<ProbeOp> &a,
                           const std::vector<ProbeOp> &b) {
  std::vector<int64_t> match(a.size(), -1);
  size_t j = 0;
  for (size_t i = 0; i < a.size() && j < b.size(); ++i) {
    // Look a little ahead in b for a's op.
    for (size_t k = j; k < std::min(b.size(), j + 8); ++k)
      if (b[k].name == a[i].name) {
        match[i] = k;
        j = k + 1;
        break;
      }
  }
  return match;
}

/// How tp=2 changed `one` into `two`: the replicated and split parts.
Quantity splitOf(double one, double two, bool batch) {
  Quantity q;
  q.batch = batch;
  q.split = std::max(0.0, 2.0 * (one - two));
  q.replicated = std::max(0.0, 2.0 * two - one);
  // Rounding of uneven shards: keep the total at tp=1 exact.
  double total = q.split + q.replicated;
  if (total > 0) {
    q.split *= one / total;
    q.replicated *= one / total;
  } else {
    q.replicated = one;
  }
  return q;
}

bool halved(double one, double other) {
  return one > 0 && other < 0.75 * one;
}

struct Combiner {
  const ProbeProgram &one, &tp2, &dp2;
  bool dpProbed;
  int64_t tokens;
  std::set<int64_t> splitDims;

  std::vector<OpCost> ops(const std::vector<ProbeOp> &a,
                          const std::vector<ProbeOp> &t,
                          const std::vector<ProbeOp> &d) {
    std::vector<int64_t> mt = align(a, t), md = align(a, d);
    std::vector<OpCost> out;
    for (size_t i = 0; i < a.size(); ++i) {
      const ProbeOp &x = a[i];
      const ProbeOp *y = mt[i] >= 0 ? &t[mt[i]] : nullptr;
      const ProbeOp *z = md[i] >= 0 ? &d[md[i]] : nullptr;
      OpCost c;
      c.name = x.name;
      // With a dp=2 probe, what halved grows with the batch; without one
      // (an odd model batch), every op of a unit does, as in a transformer.
      bool batch = dpProbed ? z && (halved(x.flops, z->flops) ||
                                    halved(x.bytes, z->bytes))
                            : true;
      c.flops = splitOf(x.flops, y ? y->flops : x.flops, batch);
      c.bytes = splitOf(x.bytes, y ? y->bytes : x.bytes, batch);
      c.cheapToRecompute = x.cheapToRecompute;
      c.recomputedWhenFull = x.recomputedWhenFull;
      if (x.mnk.size() == 3) {
        c.contraction = true;
        c.transposedLhs = x.transposedLhs;
        for (int k = 0; k < 3; ++k) {
          c.mnk[k] = x.mnk[k];
          c.mnkSplit[k] = y && y->mnk.size() == 3 &&
                          halved(double(x.mnk[k]), double(y->mnk[k]));
          c.mnkBatch[k] = dpProbed && z && z->mnk.size() == 3 &&
                          halved(double(x.mnk[k]), double(z->mnk[k]));
        }
        if (!dpProbed) {
          // The dimension that holds the tokens: the first that the
          // micro-batch's tokens divide.
          for (int k = 0; k < 3; ++k)
            if (tokens > 0 && x.mnk[k] % tokens == 0) {
              c.mnkBatch[k] = true;
              break;
            }
        }
      }
      if (y && y->shape.size() == x.shape.size())
        for (size_t k = 0; k < x.shape.size(); ++k)
          // Exactly halved: tp must divide it. A dimension that shrank
          // unevenly was padded (rtx-pad-vocabulary) and divides anyway.
          if (x.shape[k] == 2 * y->shape[k])
            splitDims.insert(x.shape[k]);
      out.push_back(std::move(c));
    }
    return out;
  }

  static std::vector<CommCost> comms(const std::vector<ProbeComm> &list) {
    std::vector<CommCost> out;
    for (const ProbeComm &c : list) {
      CommCost cost;
      cost.kind = c.kind;
      // The whole tensor of a tp collective is the same at every degree;
      // an activation's grows with the micro-batch.
      cost.bytes.replicated = c.bytes;
      cost.bytes.batch = c.batch;
      out.push_back(cost);
    }
    return out;
  }
};
} // namespace

ModelCosts planner::combineProbes(const ProbeProgram &one,
                                  const ProbeProgram &tp2,
                                  const ProbeProgram *dp2,
                                  bool sequenceParallel) {
  ModelCosts m;
  Combiner c{one, tp2, dp2 ? *dp2 : one, dp2 != nullptr,
             one.modelBatch * one.sequenceLength, {}};
  size_t n = one.units.size();
  for (size_t i = 0; i < n; ++i) {
    const ProbeUnit &a = one.units[i];
    const ProbeUnit &t = i < tp2.units.size() ? tp2.units[i] : a;
    const ProbeUnit &d = i < c.dp2.units.size() ? c.dp2.units[i] : a;
    UnitCost u;
    u.location = a.location;
    u.forward = c.ops(a.forward, t.forward, d.forward);
    u.backward = c.ops(a.backward, t.backward, d.backward);
    u.forwardComm = Combiner::comms(t.forwardComm);
    u.backwardComm = Combiner::comms(t.backwardComm);
    u.savedBytes = splitOf(a.savedBytes, t.savedBytes, true);
    u.savedSelectiveBytes =
        splitOf(a.savedSelectiveBytes, t.savedSelectiveBytes, true);
    u.boundaryBytes = splitOf(a.boundaryBytes, t.boundaryBytes, true);
    m.units.push_back(std::move(u));
    for (const ProbeOp &op : a.forward)
      m.forwardFlops += op.flops;
    for (const ProbeOp &op : a.forward)
      m.trainingFlops += op.flops;
    for (const ProbeOp &op : a.backward)
      m.trainingFlops += op.flops;
  }
  m.optimizer = c.ops(one.optimizer, tp2.optimizer, c.dp2.optimizer);
  // Optimizer ops do not see the micro-batch.
  for (OpCost &op : m.optimizer) {
    op.flops.batch = op.bytes.batch = false;
    op.mnkBatch = {};
  }
  m.optimizerComm = Combiner::comms(tp2.optimizerComm);
  for (CommCost &comm : m.optimizerComm)
    comm.bytes.batch = false;
  for (const auto &[name, param] : one.params) {
    auto it = tp2.params.find(name);
    double tpBytes = it != tp2.params.end() ? it->second.bytes : param.bytes;
    double tpState =
        it != tp2.params.end() ? it->second.stateBytes : param.stateBytes;
    Quantity bytes = splitOf(param.bytes, tpBytes, false);
    Quantity state = splitOf(param.stateBytes, tpState, false);
    if (param.unit < int64_t(n)) {
      m.units[param.unit].paramBytes += bytes;
      std::string buffer = shardUnitOf(name, "block");
      auto known = llvm::find(m.shardBufferNames, buffer);
      int64_t index = known - m.shardBufferNames.begin();
      if (known == m.shardBufferNames.end())
        m.shardBufferNames.push_back(buffer);
      auto &buffers = m.units[param.unit].shardBuffers;
      auto entry = llvm::find_if(
          buffers, [&](const auto &b) { return b.first == index; });
      if (entry == buffers.end())
        buffers.push_back({index, bytes});
      else
        entry->second += bytes;
      m.units[param.unit].stateBytes += state;
    }
    m.paramBytes += bytes;
    m.parameters += param.elements;
  }
  m.modelBatch = one.modelBatch;
  m.sequenceLength = one.sequenceLength;
  m.dtype = one.dtype;
  m.sequenceParallel = sequenceParallel;
  m.batchProbed = dp2 != nullptr;
  m.splitDims.assign(c.splitDims.begin(), c.splitDims.end());
  return m;
}
