//===- StepPrograms.cpp - what each simulated rank runs -------------------===//

#include "StepPrograms.h"

#include "Distribution.h"

#include "rtx/Executor/Executor.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Shape;

static Shape shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
}

/// describeProgram, its diagnostic thrown as an Error.
static ProgramDescription describeOrThrow(func::FuncOp function, MeshOp mesh) {
  std::string message;
  ScopedDiagnosticHandler handler(function.getContext(), [&](Diagnostic &d) {
    if (message.empty())
      message = d.str();
    return success();
  });
  FailureOr<ProgramDescription> program = describeProgram(function, mesh);
  if (failed(program))
    throw Error(message);
  return std::move(*program);
}

/// The runtime's view of a parameter (rtxrt/program/Arguments.h loads it).
static rtxrt::PartOf partOfSpec(DictionaryAttr partOf) {
  auto size = partOf.getAs<IntegerAttr>("size");
  return {partOf.getAs<StringAttr>("name").getValue().str(),
          partOf.getAs<IntegerAttr>("dim").getInt(),
          partOf.getAs<IntegerAttr>("offset").getInt(),
          size ? size.getInt() : 0};
}

static rtxrt::ArgSpec paramArgSpec(const std::string &name, InitAttr init,
                                   int64_t seed, RankedTensorType type,
                                   ShardingAttr sharding,
                                   DictionaryAttr partOf) {
  rtxrt::ArgSpec spec;
  spec.kind = rtxrt::ArgSpec::Param;
  spec.name = name;
  spec.init = toRuntime(init.getKind());
  spec.a = init.getA().convertToDouble();
  spec.b = init.getB().convertToDouble();
  spec.seed = seed;
  spec.shape = shapeOf(type);
  spec.dtype = toDType(type.getElementType());
  spec.sharding = toRuntimeSharding(sharding);
  if (partOf)
    spec.partOf = partOfSpec(partOf);
  return spec;
}

rtxrt::ArgSpec mlir::rtx::toArgSpec(const ParamSpec &param) {
  return paramArgSpec(param.name, param.init, param.seed, param.type,
                      param.sharding, param.partOf);
}

/// The runtime's view of an argument of the step.
static rtxrt::ArgSpec argSpecOf(const ProgramArgument &argument) {
  using Role = ProgramArgument::Role;
  rtxrt::ArgSpec spec;
  if (argument.role == Role::Parameter && argument.members.empty())
    spec = paramArgSpec(argument.name, argument.init, argument.seed,
                        argument.type, argument.sharding, argument.partOf);
  spec.kind = argument.role == Role::Parameter        ? rtxrt::ArgSpec::Param
              : argument.role == Role::OptimizerState ? rtxrt::ArgSpec::State
                                                      : rtxrt::ArgSpec::Input;
  if (argument.role == Role::OptimizerState && argument.partOf)
    spec.partOf = partOfSpec(argument.partOf);
  spec.name = argument.name;
  spec.state = argument.stateKey;
  spec.shape = shapeOf(argument.type);
  spec.dtype = toDType(argument.type.getElementType());
  spec.sharding = toRuntimeSharding(argument.sharding);
  spec.bound = argument.dataBound;
  spec.offload = argument.offload;
  if (!argument.members.empty()) {
    spec.flat.axis = argument.flatAxis;
    spec.flat.length = argument.flatLength;
    spec.flat.offsets = argument.offsets;
    for (const ProgramArgument &member : argument.members) {
      spec.members.push_back(argSpecOf(member));
      spec.flat.shapes.push_back(shapeOf(member.type));
    }
  }
  return spec;
}

/// The functions rtx-pipeline made, by pipeline coordinate; empty when the
/// module has none. `axis` receives the pipeline's mesh axis.
static std::vector<func::FuncOp> pipelineFunctions(ModuleOp module,
                                                   std::string &axis) {
  std::vector<func::FuncOp> byRank;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto rank =
        f->getAttrOfType<IntegerAttr>(RTXDialect::getPipelineRankAttrName());
    if (!rank || f.isExternal())
      continue;
    if (auto a =
            f->getAttrOfType<StringAttr>(RTXDialect::getPipelineAxisAttrName()))
      axis = a.getValue().str();
    size_t r = rank.getInt();
    if (byRank.size() <= r)
      byRank.resize(r + 1);
    if (byRank[r])
      throw Error("functions @" + byRank[r].getSymName().str() + " and @" +
                  f.getSymName().str() + " both run pipeline rank " +
                  std::to_string(r));
    byRank[r] = f;
  }
  for (size_t r = 0; r < byRank.size(); ++r)
    if (!byRank[r])
      throw Error("no function runs pipeline rank " + std::to_string(r) +
                  " of " + std::to_string(byRank.size()));
  return byRank;
}

StepFunctions mlir::rtx::stepFunctions(ModuleOp module, StringRef entry) {
  StepFunctions step;
  if (entry.empty())
    step.functions = pipelineFunctions(module, step.pipelineAxis);
  step.pipelined = !step.functions.empty();
  if (!step.pipelined)
    step.functions = {findEntry(module, entry)};
  return step;
}

StepPrograms::StepPrograms(const StepFunctions &step, MeshOp meshOp,
                           const rtxrt::MeshLayout &mesh)
    : mesh_(mesh) {
  const std::string &axis = step.pipelineAxis;
  int64_t numStages = static_cast<int64_t>(step.functions.size());
  if (step.pipelined) {
    if (!llvm::is_contained(mesh.axisNames(), axis) ||
        mesh.axisSize(axis) != numStages)
      throw Error("the module has " + std::to_string(numStages) +
                  " pipeline functions, but mesh " + mesh.spec() +
                  " has no axis \"" + axis + "\" of that size");
    pipeline_ = rtxrt::PipelineCoordinates(mesh, axis);
  }
  for (func::FuncOp function : step.functions)
    addProgram(function, meshOp);
  // Per result of the step: the first coordinate that returns it.
  owner_.assign(numStepResults_, {-1, -1});
  for (auto [c, p] : llvm::enumerate(programs_))
    for (auto [j, i] : llvm::enumerate(p.stepResult))
      if (i >= 0 && owner_[i].first < 0)
        owner_[i] = {int64_t(c), int64_t(j)};
  for (auto [i, o] : llvm::enumerate(owner_))
    if (o.first < 0 && !flatMembers_.count(i))
      throw Error("no pipeline function returns result " + std::to_string(i) +
                  " of the step");
  // The loss: the first coordinate's program that has one.
  for (auto [c, p] : llvm::enumerate(programs_))
    if (p.program.lossResult >= 0 && lossOwner_ < 0)
      lossOwner_ = c;
}

void StepPrograms::addProgram(func::FuncOp function, MeshOp meshOp) {
  RankProgram p{function, describeOrThrow(function, meshOp), {}, {}, {}};
  for (const ProgramArgument &argument : p.program.arguments)
    p.args.push_back(argSpecOf(argument));
  std::vector<std::string> resultStates;
  for (const ProgramResult &result : p.program.results)
    resultStates.push_back(result.stateKey);
  p.feedback = rtxrt::StateFeedback(p.args, resultStates);
  for (auto [i, r] : llvm::enumerate(p.program.results)) {
    if (!r.stateKey.empty() && r.feedsArgument < 0)
      throw Error("@" + function.getSymName().str() + ": result " +
                  std::to_string(i) + " carries state '" + r.stateKey +
                  "' that no argument receives");
    if (!r.members.empty()) {
      for (const ProgramResult &member : r.members) {
        flatMembers_.insert(member.index);
        numStepResults_ = std::max(numStepResults_, member.index + 1);
      }
      p.stepResult.push_back(-1);
      continue;
    }
    p.stepResult.push_back(r.index >= 0 ? r.index : int64_t(i));
    numStepResults_ = std::max(numStepResults_, p.stepResult.back() + 1);
  }
  programs_.push_back(std::move(p));
}

ShardingAttr StepPrograms::lossSharding() const {
  int64_t index = lossIndex();
  return index < 0 ? ShardingAttr()
                   : programs_[lossOwner_].program.results[index].sharding;
}
