//===- rtx-translate.cpp - emit programs from rtx IR ----------------------===//
//
//   rtx-translate --emit=cpp TRAIN.mlir -o program.cpp [--build-script build.sh]
//
// Turns a training step (after rtx-optimizer, and rtx-partition for several
// ranks) into a C++ program linking librtxrt; the build script compiles it on
// this machine (`sh build.sh program.cpp program`). --emit=cuda is not built
// yet and says so.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Target/BuildConfig.h"
#include "rtx/Target/Cpp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("rtx-translate options");
static cl::opt<std::string> input(cl::Positional, cl::desc("TRAIN.mlir"),
                                  cl::Required, cl::cat(category));
static cl::opt<std::string> emit("emit", cl::desc("Target: cpp (or cuda)"),
                                 cl::init("cpp"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::value_desc("FILE"), cl::init("-"),
                                   cl::cat(category));
static cl::opt<std::string> entry("entry", cl::desc("Function to emit"),
                                  cl::cat(category));
static cl::opt<std::string>
    buildScript("build-script",
                cl::desc("Also write a shell script that builds the program: "
                         "sh SCRIPT program.cpp program"),
                cl::value_desc("FILE"), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rtx-translate: emit a program from rtx IR\n");
  if (emit != "cpp") {
    llvm::errs() << "rtx-translate: error: --emit=" << emit
                 << " is not supported yet (only cpp)\n";
    return 1;
  }
  DialectRegistry registry;
  registry.insert<rtx::RTXDialect, func::FuncDialect>();
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(input, sourceMgr, &context);
  if (!module)
    return 1;
  func::FuncOp function;
  for (auto f : module->getOps<func::FuncOp>())
    if (!f.isExternal() && (entry.empty() ? !function : f.getSymName() == entry))
      function = f;
  if (!function) {
    llvm::errs() << "rtx-translate: error: no function "
                 << (entry.empty() ? std::string("") : "@" + entry)
                 << " to emit\n";
    return 1;
  }
  std::string errorMessage;
  auto out = mlir::openOutputFile(output, &errorMessage);
  if (!out) {
    llvm::errs() << "rtx-translate: error: " << errorMessage << "\n";
    return 1;
  }
  if (failed(rtx::translateToCpp(*module, function, out->os())))
    return 1;
  out->keep();
  if (!buildScript.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream script(buildScript, ec);
    if (ec) {
      llvm::errs() << "rtx-translate: error: " << ec.message() << "\n";
      return 1;
    }
    script << "#!/bin/sh\n# Builds a program emitted by rtx-translate: "
              "sh SCRIPT program.cpp program\nset -e\nexec "
           << RTX_PROGRAM_CXX << " -std=c++17 -O2 -I" << RTX_PROGRAM_INCLUDE
           << " \"$1\" -o \"$2\" " << RTX_PROGRAM_LIBS << "\n";
  }
  return 0;
}
