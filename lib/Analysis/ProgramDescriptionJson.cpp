//===- ProgramDescriptionJson.cpp - a step's description as JSON ----------===//

#include "rtx/Analysis/ProgramDescriptionJson.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::rtx;
namespace json = llvm::json;

/// A type or attribute as MLIR prints it; null for a null one.
template <typename T> static json::Value printed(T entity) {
  if (!entity)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << entity;
  return text;
}

/// A string field that may be absent: null when empty.
static json::Value orNull(const std::string &text) {
  if (text.empty())
    return nullptr;
  return text;
}

static json::Value ints(ArrayRef<int64_t> values) {
  json::Array array;
  for (int64_t value : values)
    array.push_back(value);
  return array;
}

static const char *roleName(ProgramArgument::Role role) {
  switch (role) {
  case ProgramArgument::Role::Parameter:
    return "parameter";
  case ProgramArgument::Role::OptimizerState:
    return "optimizer_state";
  case ProgramArgument::Role::Data:
    return "data";
  }
  llvm_unreachable("unknown role");
}

static json::Value toJson(const ProgramArgument &argument) {
  json::Object object{
      {"name", argument.name},
      {"role", roleName(argument.role)},
      {"state", orNull(argument.stateKey)},
      {"type", printed(argument.type)},
      {"sharding", printed(argument.sharding)},
      {"offload", orNull(argument.offload)},
  };
  if (argument.role == ProgramArgument::Role::Parameter &&
      argument.members.empty()) {
    object["init"] = printed(argument.init);
    object["seed"] = argument.seed;
    if (DictionaryAttr part = argument.partOf)
      object["part_of"] = json::Object{
          {"name", part.getAs<StringAttr>("name").getValue().str()},
          {"dim", part.getAs<IntegerAttr>("dim").getInt()},
          {"offset", part.getAs<IntegerAttr>("offset").getInt()}};
  }
  if (argument.role == ProgramArgument::Role::Data)
    object["data_bound"] = argument.dataBound;
  object["arg_number"] = argument.argNumber ? json::Value(*argument.argNumber)
                                            : json::Value(nullptr);
  if (!argument.members.empty()) {
    json::Array members;
    for (const ProgramArgument &member : argument.members)
      members.push_back(toJson(member));
    object["flat"] = json::Object{{"axis", argument.flatAxis},
                                  {"length", argument.flatLength},
                                  {"offsets", ints(argument.offsets)},
                                  {"members", std::move(members)}};
  }
  return object;
}

static json::Value toJson(const ProgramResult &result) {
  json::Object object{
      {"state", orNull(result.stateKey)},
      {"feeds_argument", result.feedsArgument},
      {"type", printed(result.type)},
      {"sharding", printed(result.sharding)},
      {"step_result", result.index},
      {"grad_of", orNull(result.gradOf)},
      {"offload", orNull(result.offload)},
  };
  if (!result.members.empty()) {
    json::Array members;
    for (const ProgramResult &member : result.members)
      members.push_back(toJson(member));
    object["flat"] = json::Object{{"axis", result.flatAxis},
                                  {"length", result.flatLength},
                                  {"offsets", ints(result.offsets)},
                                  {"members", std::move(members)}};
  }
  return object;
}

json::Value mlir::rtx::toJson(const ProgramDescription &program) {
  json::Array arguments, results;
  for (const ProgramArgument &argument : program.arguments)
    arguments.push_back(::toJson(argument));
  for (const ProgramResult &result : program.results)
    results.push_back(::toJson(result));
  func::FuncOp function = program.function; // op handles are not const
  return json::Object{{"function", function.getSymName().str()},
                      {"arguments", std::move(arguments)},
                      {"results", std::move(results)},
                      {"loss_result", program.lossResult}};
}

static json::Value meshJson(MeshOp mesh) {
  if (!mesh)
    return nullptr;
  json::Array axes;
  for (auto [name, size] : llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
    axes.push_back(json::Object{
        {"name", cast<StringAttr>(name).getValue().str()}, {"size", size}});
  return json::Object{{"name", mesh.getSymName().str()},
                      {"axes", std::move(axes)}};
}

/// A result of the step: returned by `stage`'s result `result` (a flat
/// buffer's member when `member` >= 0).
static json::Object stepResult(const ProgramResult &r, int64_t stage,
                               int64_t result, int64_t member) {
  return json::Object{{"type", printed(r.type)},
                      {"sharding", printed(r.sharding)},
                      {"state", orNull(r.stateKey)},
                      {"grad_of", orNull(r.gradOf)},
                      {"stage", stage},
                      {"result", result},
                      {"member", member}};
}

/// The step's results by index: rtx.step_result (or the position), a flat
/// buffer's members in its place; the first stage that returns one holds
/// it, as rtx-run and runProgram take it.
static json::Array stepResults(ArrayRef<ProgramDescription> stages) {
  std::map<int64_t, json::Object> byIndex;
  for (auto [c, program] : llvm::enumerate(stages))
    for (auto [j, r] : llvm::enumerate(program.results)) {
      for (auto [m, member] : llvm::enumerate(r.members))
        byIndex.try_emplace(member.index, stepResult(member, c, j, m));
      if (r.members.empty())
        byIndex.try_emplace(r.index >= 0 ? r.index : int64_t(j),
                            stepResult(r, c, j, -1));
    }
  json::Array results;
  for (auto &[index, object] : byIndex) {
    object["index"] = index;
    results.push_back(std::move(object));
  }
  return results;
}

FailureOr<json::Value> mlir::rtx::describeStepAsJson(ModuleOp module,
                                                     func::FuncOp function) {
  FailureOr<MeshOp> mesh = getProgramMesh(module);
  if (failed(mesh))
    return failure();
  SmallVector<func::FuncOp> functions = getStepFunctions(module, function);
  FailureOr<std::vector<ProgramDescription>> stages =
      describeStepStages(module, functions, *mesh);
  if (failed(stages))
    return failure();
  json::Array stageJson;
  for (const ProgramDescription &stage : *stages)
    stageJson.push_back(toJson(stage));
  json::Value pipelineAxis = nullptr;
  if (auto axis = function->getAttrOfType<StringAttr>(
          RTXDialect::getPipelineAxisAttrName()))
    pipelineAxis = axis.getValue().str();
  return json::Value(json::Object{{"function", function.getSymName().str()},
                                  {"mesh", meshJson(*mesh)},
                                  {"pipeline_axis", std::move(pipelineAxis)},
                                  {"stages", std::move(stageJson)},
                                  {"results", stepResults(*stages)}});
}
