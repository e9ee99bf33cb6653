//===- EmitProgramSpec.cpp - an emitted program's main() ------------------===//
//
// The program description, written as the C++ that builds its
// rtxrt::ProgramSpec: one block per argument, one line per result.
//
//===----------------------------------------------------------------------===//

#include "EmitProgramSpec.h"

#include "CppText.h"

#include "rtx/Analysis/MemoryPlan.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::cpp;

static const char *argKind(ProgramArgument::Role role) {
  switch (role) {
  case ProgramArgument::Role::Parameter:
    return "ArgSpec::Param";
  case ProgramArgument::Role::OptimizerState:
    return "ArgSpec::State";
  case ProgramArgument::Role::Data:
    return "ArgSpec::Input";
  }
  llvm_unreachable("unknown role");
}

/// `rtx.part_of` of a parameter (and of the optimizer state that follows
/// it) as ArgSpec::partOf.
static void emitPartOf(const ProgramArgument &argument, raw_ostream &os) {
  DictionaryAttr part = argument.partOf;
  if (!part)
    return;
  auto size = part.getAs<IntegerAttr>("size");
  os << "    a.partOf = PartOf{"
     << quoted(part.getAs<StringAttr>("name").getValue()) << ", "
     << part.getAs<IntegerAttr>("dim").getInt() << ", "
     << part.getAs<IntegerAttr>("offset").getInt() << ", "
     << (size ? size.getInt() : 0) << "};\n";
}

/// Appends the argument's ArgSpec to `into` (spec.args, s.args); a flat
/// buffer's members first go into its own `members`, in a nested block.
static void emitArgument(const ProgramArgument &argument, StringRef into,
                         raw_ostream &os, unsigned depth = 0) {
  std::string a = "a" + std::to_string(depth);
  os << "  {\n    ArgSpec " << a << ";\n";
  for (auto [member, offset] : llvm::zip(argument.members, argument.offsets)) {
    emitArgument(member, a + ".members", os, depth + 1);
    os << "    " << a << ".flat.offsets.push_back(" << offset << ");\n    " << a
       << ".flat.shapes.push_back(" << shape(member.type) << ");\n";
  }
  if (!argument.members.empty())
    os << "    " << a << ".flat.axis = " << quoted(argument.flatAxis)
       << ";\n    " << a << ".flat.length = " << argument.flatLength << ";\n";
  os << "    ArgSpec &a = " << a << ";\n    a.kind = " << argKind(argument.role)
     << ";\n    a.name = " << quoted(argument.name) << ";\n";
  if (!argument.stateKey.empty())
    os << "    a.state = " << quoted(argument.stateKey) << ";\n";
  if (!argument.offload.empty())
    os << "    a.offload = " << quoted(argument.offload) << ";\n";
  switch (argument.role) {
  case ProgramArgument::Role::Parameter:
    if (!argument.members.empty())
      break; // each member has its initializer
    os << "    a.init = " << enumerator(toRuntime(argument.init.getKind()))
       << ";\n    a.a = " << number(argument.init.getA().convertToDouble())
       << ";\n    a.b = " << number(argument.init.getB().convertToDouble())
       << ";\n    a.seed = " << argument.seed << ";\n";
    emitPartOf(argument, os);
    break;
  case ProgramArgument::Role::OptimizerState:
    emitPartOf(argument, os);
    break;
  case ProgramArgument::Role::Data:
    os << "    a.bound = " << argument.dataBound << ";\n";
    break;
  }
  os << "    a.shape = " << shape(argument.type)
     << ";\n    a.dtype = " << dtype(argument.type)
     << ";\n    a.sharding = " << sharding(argument.sharding) << ";\n    "
     << into << ".push_back(a);\n  }\n";
}

static void emitResult(const ProgramResult &result, StringRef into,
                       raw_ostream &os) {
  os << "  " << into << ".push_back(ResultSpec{" << quoted(result.stateKey)
     << ", " << shape(result.type) << ", " << sharding(result.sharding) << ", "
     << dtype(result.type) << ", " << result.index << "});\n";
  if (result.members.empty())
    return;
  // A flat buffer: its layout and members, each written as a result.
  std::string r = into.str() + ".back()";
  if (!result.offload.empty())
    os << "  " << r << ".offload = " << quoted(result.offload) << ";\n";
  os << "  " << r << ".flat.axis = " << quoted(result.flatAxis) << ";\n  " << r
     << ".flat.length = " << result.flatLength << ";\n";
  for (auto [member, offset] : llvm::zip(result.members, result.offsets)) {
    emitResult(member, r + ".members", os);
    os << "  " << r << ".flat.offsets.push_back(" << offset << ");\n  " << r
       << ".flat.shapes.push_back(" << shape(member.type) << ");\n";
  }
}

/// The index among the step's results of a pipeline stage's result `j`.
static int64_t stepResultOf(const ProgramDescription &stage, unsigned j) {
  if (!stage.results[j].members.empty())
    return -1; // a flat buffer: its members are step results
  func::FuncOp function = stage.function;
  auto index = function.getResultAttrOfType<IntegerAttr>(
      j, RTXDialect::getStepResultAttrName());
  return index ? index.getInt() : j;
}

/// main()'s start: the spec, its name and its mesh.
static void emitBegin(const ProgramDescription &program, raw_ostream &os) {
  func::FuncOp function = program.function;
  os << "int main(int argc, char **argv) {\n  ProgramSpec spec;\n"
     << "  spec.name = " << quoted(function.getSymName()) << ";\n";
  if (MeshOp mesh = program.mesh) {
    SmallVector<StringRef> axes;
    for (Attribute axis : mesh.getAxisNames())
      axes.push_back(cast<StringAttr>(axis).getValue());
    os << "  spec.mesh = MeshLayout(" << strings(axes) << ", "
       << ints(mesh.getAxisSizes()) << ");\n";
  }
}

/// The optimizer's learning-rate schedule, for the metrics' `lr`: that of
/// every update of the step's functions (an SGD rate is constant); none
/// when they have none or disagree (the program then writes no rate).
static void emitLrSchedule(ArrayRef<func::FuncOp> functions, raw_ostream &os) {
  std::optional<std::string> schedule;
  bool agree = true;
  auto see = [&](double lr, int64_t warmup, int64_t decay, double minLr) {
    std::string text = "LrSchedule{" + number(lr) + ", " +
                       std::to_string(warmup) + ", " + std::to_string(decay) +
                       ", " + number(minLr) + "}";
    if (schedule && *schedule != text)
      agree = false;
    schedule = text;
  };
  for (func::FuncOp function : functions)
    function.walk([&](Operation *op) {
      if (auto adam = dyn_cast<AdamWUpdateOp>(op))
        see(adam.getLr().convertToDouble(), adam.getWarmupSteps(),
            adam.getDecaySteps(), adam.getMinLr().convertToDouble());
      else if (auto multi = dyn_cast<MultiAdamWUpdateOp>(op))
        see(multi.getLr().convertToDouble(), multi.getWarmupSteps(),
            multi.getDecaySteps(), multi.getMinLr().convertToDouble());
      else if (auto sgd = dyn_cast<SGDUpdateOp>(op))
        see(sgd.getLr().convertToDouble(), 0, 0, 0.0);
    });
  if (schedule && agree)
    os << "  spec.lrSchedule = " << *schedule << ";\n";
}

/// main()'s end: the groups to create, the device, the step, the run.
static void emitEnd(const std::vector<std::string> &collectiveAxes, bool cuda,
                    StringRef step, raw_ostream &os) {
  for (const std::string &axes : collectiveAxes)
    os << "  spec.collectiveAxes.push_back(" << axes << ");\n";
  if (cuda)
    os << "  spec.device = &gpu::deviceRuntime();\n";
  os << step << "  return runProgram(spec, argc, argv);\n}\n";
}

void mlir::rtx::emitProgramMain(const ProgramDescription &program,
                                const std::vector<std::string> &collectiveAxes,
                                bool cuda, raw_ostream &os) {
  emitBegin(program, os);
  for (const ProgramArgument &argument : program.arguments)
    emitArgument(argument, "spec.args", os);
  for (const ProgramResult &result : program.results)
    emitResult(result, "spec.results", os);
  os << "  spec.lossResult = " << program.lossResult << ";\n";
  emitLrSchedule({func::FuncOp(program.function)}, os);
  if (int64_t slots =
          offloadSlots(func::FuncOp(program.function).getBody().front()))
    os << "  spec.offloadSlots = " << slots << ";\n";
  // rtx-plan-memory's peak: a GPU program logs it beside its step arena.
  if (cuda) {
    MemoryPlan plan = planMemory(program);
    os << "  spec.staticPeakBytes = " << plan.peakBytes << ";\n"
       << "  spec.staticArgumentBytes = " << plan.argumentBytes << ";\n";
  }
  emitEnd(collectiveAxes, cuda, "  spec.step = step;\n", os);
}

void mlir::rtx::emitPipelinedMain(
    const std::vector<ProgramDescription> &stages,
    const std::vector<std::string> &stepNames,
    const std::vector<std::string> &collectiveAxes, bool cuda,
    raw_ostream &os) {
  func::FuncOp first = stages.front().function;
  emitBegin(stages.front(), os);
  os << "  spec.pipelineAxis = "
     << quoted(first
                   ->getAttrOfType<StringAttr>(
                       RTXDialect::getPipelineAxisAttrName())
                   .getValue())
     << ";\n";
  // The step's results, each described by the first stage that returns it.
  std::map<int64_t, const ProgramResult *> stepResults;
  int64_t loss = -1;
  for (const ProgramDescription &stage : stages)
    for (auto [j, result] : llvm::enumerate(stage.results)) {
      for (const ProgramResult &member : result.members)
        stepResults.emplace(member.index, &member);
      int64_t index = stepResultOf(stage, j);
      if (index < 0)
        continue;
      stepResults.emplace(index, &result);
      if (int64_t(j) == stage.lossResult && loss < 0)
        loss = index;
    }
  for (auto [index, result] : stepResults)
    emitResult(*result, "spec.results", os);
  os << "  spec.lossResult = " << loss << ";\n";
  SmallVector<func::FuncOp> functions;
  for (const ProgramDescription &stage : stages)
    functions.push_back(stage.function);
  emitLrSchedule(functions, os);
  for (auto [c, stage] : llvm::enumerate(stages)) {
    os << "  {\n  PipelineStage s;\n";
    for (const ProgramArgument &argument : stage.arguments)
      emitArgument(argument, "s.args", os);
    for (auto [j, result] : llvm::enumerate(stage.results)) {
      emitResult(result, "s.results", os);
      os << "  s.stepResult.push_back(" << stepResultOf(stage, j) << ");\n";
    }
    if (int64_t slots =
            offloadSlots(func::FuncOp(stage.function).getBody().front()))
      os << "  s.offloadSlots = " << slots << ";\n";
    os << "  s.lossResult = " << stage.lossResult
       << ";\n  s.step = " << stepNames[c]
       << ";\n  spec.stages.push_back(s);\n  }\n";
  }
  emitEnd(collectiveAxes, cuda, "", os);
}
