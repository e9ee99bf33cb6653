//===- PropagateSharding.cpp - the rtx-propagate-sharding pass ------------===//
//
// Completes every value's sharding from seeds through the ops' sharding
// rules. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXPROPAGATESHARDING
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// A value's sharding during propagation; seeds win over propagated ones.
struct Known {
  Layout layout;
  /// 0: a seed on a parameter, 1: any other seed, 2: propagated. Weight
  /// layouts are deliberate choices (Megatron's column/row split), so they
  /// win an axis over activation seeds.
  int priority;
};

/// Proposed axes for one factor of an op's rule.
struct FactorChoice {
  SmallVector<std::string, 2> axes;
  int priority = 3;
};

class Propagator {
public:
  Propagator(func::FuncOp function, const MeshAxes &mesh, bool debugOrigin)
      : function(function), mesh(mesh), debugOrigin(debugOrigin) {}

  void run();

private:
  void seed();
  bool propagate(Operation *op);
  void write();

  func::FuncOp function;
  const MeshAxes &mesh;
  bool debugOrigin;
  llvm::DenseMap<Value, Known> known;
  llvm::DenseMap<Value, Operation *> origin;
};
} // namespace

static int64_t rankOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getRank() : -1;
}

void Propagator::seed() {
  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (auto attr = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), RTXDialect::getShardingAttrName())) {
      bool isParam = static_cast<bool>(function.getArgAttr(
          arg.getArgNumber(), RTXDialect::getParamAttrName()));
      known[arg] = {Layout::fromAttr(attr), isParam ? 0 : 1};
    }
  for (Operation &op : body) {
    Attribute attr = op.getAttr(RTXDialect::getShardingAttrName());
    int priority = isa<ParamOp>(op) ? 0 : 1;
    if (auto sharding = dyn_cast_or_null<ShardingAttr>(attr))
      known[op.getResult(0)] = {Layout::fromAttr(sharding), priority};
    else if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
      for (auto [result, element] : llvm::zip(op.getResults(), array))
        known[result] = {Layout::fromAttr(cast<ShardingAttr>(element)),
                         priority};
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
    if (auto attr = function.getResultAttrOfType<ShardingAttr>(
            i, RTXDialect::getShardingAttrName()))
      if (!known.count(operand))
        known[operand] = {Layout::fromAttr(attr), 1};
}

bool Propagator::propagate(Operation *op) {
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op);
  if (!ruleOp)
    return false;
  OpShardingRule rule = ruleOp.getShardingRule();
  // Operands, then results, with their factor lists.
  SmallVector<std::pair<Value, const OpShardingRule::ValueFactors *>> tensors;
  for (auto [operand, factors] :
       llvm::zip(op->getOperands(), rule.operandFactors))
    tensors.push_back({operand, &factors});
  for (auto [result, factors] : llvm::zip(op->getResults(), rule.resultFactors))
    tensors.push_back({result, &factors});

  // Each factor takes the axes of the highest-priority tensor dimension whose
  // major factor it is; the first such tensor wins ties.
  SmallVector<FactorChoice> choice(rule.getNumFactors());
  for (auto &[value, factors] : tensors) {
    auto it = known.find(value);
    if (it == known.end())
      continue;
    const Layout &layout = it->second.layout;
    for (size_t d = 0; d < factors->size() && d < layout.dims.size(); ++d) {
      const auto &axes = layout.dims[d];
      if (axes.empty() || (*factors)[d].empty())
        continue;
      int64_t f = (*factors)[d].front();
      if (rule.factorKinds[f] == FactorKind::NeedReplication ||
          rule.factorSizes[f] % mesh.product(axes) != 0)
        continue;
      if (it->second.priority < choice[f].priority)
        choice[f] = {SmallVector<std::string, 2>(axes.begin(), axes.end()),
                     it->second.priority};
    }
  }
  // An axis may split only one factor: the higher-priority proposal keeps
  // it, and among equals the earlier factor.
  SmallVector<size_t> order = llvm::to_vector(llvm::seq<size_t>(0, choice.size()));
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return choice[a].priority < choice[b].priority;
  });
  llvm::StringSet<> used;
  for (size_t f : order) {
    FactorChoice &c = choice[f];
    if (llvm::any_of(c.axes, [&](const std::string &a) {
          return used.contains(a);
        })) {
      c.axes.clear();
      continue;
    }
    for (const std::string &a : c.axes)
      used.insert(a);
  }

  bool changed = false;
  for (auto &[value, factors] : tensors) {
    if (known.count(value) || rankOf(value) < 0)
      continue;
    Layout layout = Layout::replicated(rankOf(value));
    auto shape = cast<RankedTensorType>(value.getType()).getShape();
    bool any = false;
    for (size_t d = 0; d < factors->size(); ++d) {
      // Only the major factor's split is a block split of the dimension.
      if ((*factors)[d].empty())
        continue;
      const FactorChoice &c = choice[(*factors)[d].front()];
      if (c.axes.empty() || shape[d] % mesh.product(c.axes) != 0)
        continue;
      layout.dims[d].assign(c.axes.begin(), c.axes.end());
      any = true;
    }
    if (!any)
      continue;
    known[value] = {layout, 2};
    origin[value] = op;
    changed = true;
  }
  return changed;
}

void Propagator::write() {
  MLIRContext *ctx = function.getContext();
  StringRef meshName = mesh.name();
  auto attrFor = [&](Value v) {
    auto it = known.find(v);
    Layout layout =
        it != known.end() ? it->second.layout : Layout::replicated(rankOf(v));
    return layout.toAttr(ctx, meshName);
  };
  Block &body = function.getBody().front();
  // All argument (and result) attributes at once: setting them one by one
  // rebuilds the whole list each time, quadratic in the number of parameters.
  SmallVector<DictionaryAttr> argAttrs;
  for (BlockArgument arg : body.getArguments()) {
    NamedAttrList attrs(function.getArgAttrDict(arg.getArgNumber()));
    if (rankOf(arg) >= 0)
      attrs.set(RTXDialect::getShardingAttrName(), attrFor(arg));
    argAttrs.push_back(attrs.getDictionary(ctx));
  }
  function.setAllArgAttrs(argAttrs);
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() == 0 ||
        !llvm::all_of(op.getResults(),
                      [](Value v) { return rankOf(v) >= 0; }))
      continue;
    if (op.getNumResults() == 1) {
      op.setAttr(RTXDialect::getShardingAttrName(), attrFor(op.getResult(0)));
    } else {
      SmallVector<Attribute> attrs;
      for (Value result : op.getResults())
        attrs.push_back(attrFor(result));
      op.setAttr(RTXDialect::getShardingAttrName(), ArrayAttr::get(ctx, attrs));
    }
    if (debugOrigin) {
      for (Value result : op.getResults()) {
        auto it = origin.find(result);
        if (it == origin.end())
          continue;
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "propagated through '" << it->second->getName() << "' at "
           << it->second->getLoc();
        op.setAttr(RTXDialect::getShardingOriginAttrName(),
                   StringAttr::get(ctx, text));
      }
    }
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    NamedAttrList attrs(function.getResultAttrDict(i));
    if (rankOf(operand) >= 0 && !attrs.get(RTXDialect::getShardingAttrName()))
      attrs.set(RTXDialect::getShardingAttrName(), attrFor(operand));
    resultAttrs.push_back(attrs.getDictionary(ctx));
  }
  function.setAllResultAttrs(resultAttrs);
}

void Propagator::run() {
  seed();
  SmallVector<Operation *> ops;
  for (Operation &op : function.getBody().front().without_terminator())
    ops.push_back(&op);
  // Forward and backward sweeps until nothing changes (each sweep can only
  // add shardings, so this ends).
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : ops)
      changed |= propagate(op);
    for (Operation *op : llvm::reverse(ops))
      changed |= propagate(op);
  }
  write();
}

namespace {
struct RTXPropagateShardingPass
    : mlir::rtx::impl::RTXPropagateShardingBase<RTXPropagateShardingPass> {
  using RTXPropagateShardingBase::RTXPropagateShardingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-propagate-sharding");
    if (failed(meshOp))
      return signalPassFailure();
    MeshAxes mesh(*meshOp);
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        Propagator(function, mesh, debugOrigin).run();
  }
};
} // namespace
