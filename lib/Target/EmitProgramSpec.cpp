//===- EmitProgramSpec.cpp - an emitted program's main() ------------------===//
//
// The program description, written as the C++ that builds its
// rtxrt::ProgramSpec: one block per argument, one line per result.
//
//===----------------------------------------------------------------------===//

#include "EmitProgramSpec.h"

#include "CppText.h"

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

static void emitArgument(const ProgramArgument &argument, raw_ostream &os) {
  os << "  {\n    ArgSpec a;\n    a.kind = " << argKind(argument.role)
     << ";\n    a.name = " << quoted(argument.name) << ";\n";
  if (!argument.stateKey.empty())
    os << "    a.state = " << quoted(argument.stateKey) << ";\n";
  switch (argument.role) {
  case ProgramArgument::Role::Parameter:
    os << "    a.init = " << enumerator(toRuntime(argument.init.getKind()))
       << ";\n    a.a = " << number(argument.init.getA().convertToDouble())
       << ";\n    a.b = " << number(argument.init.getB().convertToDouble())
       << ";\n    a.seed = " << argument.seed << ";\n";
    break;
  case ProgramArgument::Role::OptimizerState:
    break;
  case ProgramArgument::Role::Data:
    os << "    a.bound = " << argument.dataBound << ";\n";
    break;
  }
  os << "    a.shape = " << shape(argument.type)
     << ";\n    a.dtype = " << dtype(argument.type)
     << ";\n    a.sharding = " << sharding(argument.sharding)
     << ";\n    spec.args.push_back(a);\n  }\n";
}

void mlir::rtx::emitProgramMain(const ProgramDescription &program,
                                const std::vector<std::string> &collectiveAxes,
                                bool cuda, raw_ostream &os) {
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
  for (const ProgramArgument &argument : program.arguments)
    emitArgument(argument, os);
  for (const ProgramResult &result : program.results)
    os << "  spec.results.push_back(ResultSpec{" << quoted(result.stateKey)
       << ", " << shape(result.type) << ", " << sharding(result.sharding)
       << "});\n";
  os << "  spec.lossResult = " << program.lossResult << ";\n";
  for (const std::string &axes : collectiveAxes)
    os << "  spec.collectiveAxes.push_back(" << axes << ");\n";
  if (cuda)
    os << "  spec.device = &gpu::deviceRuntime();\n";
  os << "  spec.step = step;\n  return runProgram(spec, argc, argv);\n}\n";
}
