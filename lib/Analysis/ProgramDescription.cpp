//===- ProgramDescription.cpp - what a training step takes and gives ------===//

#include "rtx/Analysis/ProgramDescription.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::rtx;

llvm::DenseSet<Operation *>
mlir::rtx::forwardOps(const ProgramDescription &program) {
  llvm::DenseSet<Operation *> forward;
  func::FuncOp function = program.function;
  if (function.isExternal())
    return forward;
  Block &body = function.getBody().front();
  if (function->hasAttr(RTXDialect::getPipelineRankAttrName())) {
    for (Operation &op : body)
      if (!op.hasAttr(RTXDialect::getBackwardAttrName()))
        forward.insert(&op);
    return forward;
  }
  if (program.lossResult < 0)
    return forward;
  SmallVector<Value> work = {
      body.getTerminator()->getOperand(program.lossResult)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !forward.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return forward;
}

const ProgramArgument *ProgramDescription::find(Value value) const {
  for (const ProgramArgument &argument : arguments)
    if (argument.value == value)
      return &argument;
  return nullptr;
}

FailureOr<MeshOp> mlir::rtx::getProgramMesh(ModuleOp module) {
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() > 1)
    return module.emitError("a program runs on one rtx.mesh; the module has ")
           << meshes.size();
  return meshes.empty() ? MeshOp() : meshes.front();
}

SmallVector<func::FuncOp> mlir::rtx::getStepFunctions(ModuleOp module,
                                                      func::FuncOp function) {
  if (!function->hasAttr(RTXDialect::getPipelineRankAttrName()))
    return {function};
  SmallVector<func::FuncOp> byRank;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto rank =
        f->getAttrOfType<IntegerAttr>(RTXDialect::getPipelineRankAttrName());
    if (!rank || f.isExternal())
      continue;
    if (byRank.size() <= rank.getUInt())
      byRank.resize(rank.getUInt() + 1);
    byRank[rank.getUInt()] = f;
  }
  return byRank;
}

/// The members of an `rtx.flat` layout (verified by the dialect), as
/// arguments; results take the state key, type, sharding and index.
static FailureOr<std::vector<ProgramArgument>>
describeFlatMembers(func::FuncOp function, DictionaryAttr layout,
                    std::vector<int64_t> &offsets,
                    std::vector<int64_t> *resultIndices = nullptr) {
  std::vector<ProgramArgument> members;
  for (Attribute element : layout.getAs<ArrayAttr>("members")) {
    auto fields = cast<DictionaryAttr>(element);
    ProgramArgument member;
    member.type =
        cast<RankedTensorType>(fields.getAs<TypeAttr>("type").getValue());
    member.sharding = fields.getAs<ShardingAttr>("sharding");
    member.stateKey = fields.getAs<StringAttr>("state").getValue().str();
    auto name = fields.getAs<StringAttr>("name");
    member.name = name ? name.getValue().str() : member.stateKey;
    auto kind = fields.getAs<StringAttr>("kind");
    if (kind && kind.getValue() == "param") {
      member.role = ProgramArgument::Role::Parameter;
      member.init = fields.getAs<InitAttr>("init");
      if (!member.init)
        return function.emitError() << "flat buffer member '" << member.name
                                    << "' is a parameter without 'init'";
      if (auto seed = fields.getAs<IntegerAttr>("seed"))
        member.seed = seed.getInt();
      member.partOf = fields.getAs<DictionaryAttr>("part_of");
    } else {
      member.role = ProgramArgument::Role::OptimizerState;
      member.name = member.stateKey;
    }
    if (resultIndices) {
      auto index = fields.getAs<IntegerAttr>("result");
      resultIndices->push_back(index ? index.getInt() : -1);
    }
    offsets.push_back(fields.getAs<IntegerAttr>("offset").getInt());
    members.push_back(member);
  }
  return members;
}

/// A function argument: parameter, optimizer state, or data.
static FailureOr<ProgramArgument>
describeArgument(func::FuncOp function, BlockArgument arg, int64_t &dataArgs) {
  unsigned index = arg.getArgNumber();
  auto attr = [&](StringRef name) { return function.getArgAttr(index, name); };
  ProgramArgument argument;
  argument.type = cast<RankedTensorType>(arg.getType());
  argument.sharding = function.getArgAttrOfType<ShardingAttr>(
      index, RTXDialect::getShardingAttrName());
  argument.value = arg;
  argument.argNumber = index;
  if (auto state =
          dyn_cast_or_null<StringAttr>(attr(RTXDialect::getStateAttrName())))
    argument.stateKey = state.getValue().str();
  if (auto layout = dyn_cast_or_null<DictionaryAttr>(
          attr(RTXDialect::getFlatAttrName()))) {
    FailureOr<std::vector<ProgramArgument>> members =
        describeFlatMembers(function, layout, argument.offsets);
    if (failed(members))
      return failure();
    argument.members = std::move(*members);
    argument.flatAxis = layout.getAs<StringAttr>("axis").getValue().str();
    argument.flatLength = layout.getAs<IntegerAttr>("length").getInt();
    if (auto tier = dyn_cast_or_null<StringAttr>(
            attr(RTXDialect::getOffloadAttrName())))
      argument.offload = tier.getValue().str();
    argument.role = argument.members.front().role;
    argument.name = argument.stateKey;
    return argument;
  }
  if (auto name =
          dyn_cast_or_null<StringAttr>(attr(RTXDialect::getParamAttrName()))) {
    argument.role = ProgramArgument::Role::Parameter;
    argument.name = name.getValue().str();
    argument.init =
        dyn_cast_or_null<InitAttr>(attr(RTXDialect::getInitAttrName()));
    if (!argument.init)
      return function.emitError()
             << "parameter argument '" << argument.name << "' has no "
             << RTXDialect::getInitAttrName() << " initializer";
    if (auto seed =
            dyn_cast_or_null<IntegerAttr>(attr(RTXDialect::getSeedAttrName())))
      argument.seed = seed.getInt();
    argument.partOf =
        dyn_cast_or_null<DictionaryAttr>(attr(RTXDialect::getPartOfAttrName()));
    if (argument.stateKey.empty())
      argument.stateKey = "param:" + argument.name;
    return argument;
  }
  if (!argument.stateKey.empty()) {
    argument.role = ProgramArgument::Role::OptimizerState;
    argument.name = argument.stateKey;
    return argument;
  }
  argument.role = ProgramArgument::Role::Data;
  argument.name = "arg" + std::to_string(dataArgs++);
  argument.dataBound = getIntegerDataBound(arg);
  return argument;
}

/// Optimizer state follows its parameter: the state of a part of a user's
/// tensor (`exp_avg:NAME@k`) is the same block of the user's state, which
/// checkpoints store (so a checkpoint reads back on a mesh without tp).
static void sharePartsWithState(std::vector<ProgramArgument> &arguments) {
  llvm::StringMap<DictionaryAttr> parts;
  auto collect = [&](const ProgramArgument &a) {
    if (a.role == ProgramArgument::Role::Parameter && a.partOf)
      parts[a.name] = a.partOf;
  };
  auto share = [&](ProgramArgument &a) {
    if (a.role != ProgramArgument::Role::OptimizerState)
      return;
    size_t colon = a.stateKey.find(':');
    if (colon != std::string::npos)
      a.partOf = parts.lookup(a.stateKey.substr(colon + 1));
  };
  for (const ProgramArgument &a : arguments) {
    collect(a);
    llvm::for_each(a.members, collect);
  }
  for (ProgramArgument &a : arguments) {
    share(a);
    llvm::for_each(a.members, share);
  }
}

FailureOr<ProgramDescription> mlir::rtx::describeProgram(func::FuncOp function,
                                                         MeshOp mesh) {
  ProgramDescription program;
  program.function = function;
  program.mesh = mesh;
  Block &body = function.getBody().front();
  int64_t dataArgs = 0;
  for (BlockArgument arg : body.getArguments()) {
    FailureOr<ProgramArgument> argument =
        describeArgument(function, arg, dataArgs);
    if (failed(argument))
      return failure();
    program.arguments.push_back(*argument);
  }
  for (InputOp input : body.getOps<InputOp>()) {
    ProgramArgument argument;
    argument.role = ProgramArgument::Role::Data;
    argument.name = input.getName().str();
    argument.type = cast<RankedTensorType>(input.getType());
    argument.sharding =
        input->getAttrOfType<ShardingAttr>(RTXDialect::getShardingAttrName());
    argument.dataBound = getIntegerDataBound(input.getResult());
    argument.value = input.getResult();
    program.arguments.push_back(argument);
  }
  sharePartsWithState(program.arguments);

  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    ProgramResult result;
    result.type = cast<RankedTensorType>(function.getResultTypes()[i]);
    result.sharding = function.getResultAttrOfType<ShardingAttr>(
        i, RTXDialect::getShardingAttrName());
    if (auto index = function.getResultAttrOfType<IntegerAttr>(
            i, RTXDialect::getStepResultAttrName()))
      result.index = index.getInt();
    if (auto grad = function.getResultAttrOfType<StringAttr>(
            i, RTXDialect::getGradOfAttrName()))
      result.gradOf = grad.getValue().str();
    if (auto layout = function.getResultAttrOfType<DictionaryAttr>(
            i, RTXDialect::getFlatAttrName())) {
      std::vector<int64_t> indices;
      FailureOr<std::vector<ProgramArgument>> members =
          describeFlatMembers(function, layout, result.offsets, &indices);
      if (failed(members))
        return failure();
      for (auto [m, index] : llvm::zip(*members, indices)) {
        ProgramResult member;
        member.stateKey = m.stateKey;
        member.type = m.type;
        member.sharding = m.sharding;
        member.index = index;
        result.members.push_back(member);
      }
      result.flatAxis = layout.getAs<StringAttr>("axis").getValue().str();
      result.flatLength = layout.getAs<IntegerAttr>("length").getInt();
      if (auto tier = function.getResultAttrOfType<StringAttr>(
              i, RTXDialect::getOffloadAttrName()))
        result.offload = tier.getValue().str();
    }
    if (auto state = function.getResultAttrOfType<StringAttr>(
            i, RTXDialect::getStateAttrName())) {
      result.stateKey = state.getValue().str();
      for (auto [index, argument] : llvm::enumerate(program.arguments))
        if (argument.stateKey == result.stateKey)
          result.feedsArgument = index;
    } else if (program.lossResult < 0 && result.type.getRank() == 0 &&
               isa<FloatType>(result.type.getElementType())) {
      program.lossResult = i;
    }
    program.results.push_back(result);
  }
  return program;
}

FailureOr<std::vector<ProgramDescription>>
mlir::rtx::describeStepStages(ModuleOp module, ArrayRef<func::FuncOp> functions,
                              MeshOp mesh) {
  std::vector<ProgramDescription> stages;
  for (auto [rank, f] : llvm::enumerate(functions)) {
    if (!f)
      return module.emitError() << "no function runs pipeline rank " << rank
                                << " of " << functions.size();
    FailureOr<ProgramDescription> program = describeProgram(f, mesh);
    if (failed(program))
      return failure();
    stages.push_back(std::move(*program));
  }
  return stages;
}
