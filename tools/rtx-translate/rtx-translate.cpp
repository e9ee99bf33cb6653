//===- rtx-translate.cpp - emit programs from rtx IR ----------------------===//
//
//   rtx-translate --emit=cpp|cuda TRAIN.mlir -o program.cpp [--build-script
//   build.sh]
//   rtx-translate --emit=description TRAIN.mlir -o program.json
//
// Turns a training step (after rtx-optimizer, and rtx-partition for several
// ranks) into a C++ or CUDA program linking librtxrt; the build script
// compiles it on this machine (`sh build.sh program.cpp program`). A CUDA
// build script uses nvcc and librtxrt_cuda; with RTX_GPU_EMULATION=1 it
// builds the same program against the host emulation of the GPU runtime,
// which runs without a GPU. The script reuses a binary built before from the
// same inputs (BuildScript.h). --emit=description writes what the step
// takes and gives as JSON (rtx/Analysis/ProgramDescriptionJson.h), for tools
// that would otherwise parse printed IR (the Python driver).
//
//===----------------------------------------------------------------------===//

#include "BuildScript.h"

#include "rtx/Analysis/ProgramDescriptionJson.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Target/BuildConfig.h"
#include "rtx/Target/Cpp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("rtx-translate options");
static cl::opt<std::string> input(cl::Positional, cl::desc("TRAIN.mlir"),
                                  cl::Required, cl::cat(category));
static cl::opt<std::string> emit("emit",
                                 cl::desc("Target: cpp (CPU kernels, Gloo), "
                                          "cuda (cuBLAS, CUDA kernels, NCCL), "
                                          "or description (the step's "
                                          "arguments and results as JSON)"),
                                 cl::init("cpp"), cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::value_desc("FILE"), cl::init("-"),
                                   cl::cat(category));
static cl::opt<std::string> entry("entry", cl::desc("Function to emit"),
                                  cl::cat(category));
static cl::opt<std::string>
    buildScript("build-script",
                cl::desc("Also write a shell script that builds the program: "
                         "sh SCRIPT program.cpp program (for cuda: "
                         "RTX_GPU_EMULATION=1 sh SCRIPT ... builds it for the "
                         "host emulation)"),
                cl::value_desc("FILE"), cl::cat(category));

static cl::opt<unsigned> optLevel(
    "opt-level",
    cl::desc("Optimisation level (0-3) at which the build script compiles the "
             "program's own code; the runtime it calls is built optimised "
             "either way (docs/benchmarks.md: -O0 builds in seconds and steps "
             "as fast as -O2)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> programCache(
    "program-cache",
    cl::desc("Folder where the build script keeps built binaries, keyed by "
             "the source, the build command and the runtime; empty: build "
             "every time"),
    cl::value_desc("DIR"), cl::init(RTX_PROGRAM_CACHE_DIR), cl::cat(category));

/// Refuses options that contradict each other; false after saying why.
static bool checkOptions() {
  if (emit != "cpp" && emit != "cuda" && emit != "description") {
    llvm::errs() << "rtx-translate: error: --emit=" << emit
                 << " is not a target: use --emit=cpp or --emit=cuda "
                    "(a program) or --emit=description (JSON)\n";
    return false;
  }
  if (optLevel > 3) {
    llvm::errs() << "rtx-translate: error: --opt-level=" << optLevel
                 << " is not a level: use 0, 1, 2 or 3\n";
    return false;
  }
  if (emit == "description" && !buildScript.empty()) {
    llvm::errs() << "rtx-translate: error: --build-script builds a program: "
                    "--emit=description writes none\n";
    return false;
  }
  // Both shape the build script only: without one they would do nothing.
  if (buildScript.empty() &&
      (optLevel.getNumOccurrences() || programCache.getNumOccurrences())) {
    llvm::errs() << "rtx-translate: error: --"
                 << (optLevel.getNumOccurrences() ? "opt-level"
                                                  : "program-cache")
                 << " shapes the build script: pass --build-script FILE too\n";
    return false;
  }
  return true;
}

/// The step's description as JSON, for --emit=description.
static LogicalResult writeDescription(ModuleOp module, func::FuncOp function,
                                      llvm::raw_ostream &os) {
  FailureOr<llvm::json::Value> description =
      rtx::describeStepAsJson(module, function);
  if (failed(description))
    return failure();
  os << llvm::formatv("{0:2}", *description) << "\n";
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rtx-translate: emit a program from rtx IR\n");
  if (!checkOptions())
    return 1;
  bool cuda = emit == "cuda";
  DialectRegistry registry;
  registry.insert<rtx::RTXDialect, func::FuncDialect>();
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(input, sourceMgr, &context);
  if (!module)
    return 1;
  // A pipelined module (rtx-pipeline) is one program of all its stage
  // functions; the first names it.
  func::FuncOp function;
  for (auto f : module->getOps<func::FuncOp>())
    if (!f.isExternal() &&
        (entry.empty() ? !function : f.getSymName() == entry))
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
  if (emit == "description") {
    if (failed(writeDescription(*module, function, out->os())))
      return 1;
    out->keep();
    return 0;
  }
  if (failed(rtx::translateToProgram(*module, function,
                                     cuda ? rtx::ProgramTarget::Cuda
                                          : rtx::ProgramTarget::Cpu,
                                     out->os())))
    return 1;
  out->keep();
  if (!buildScript.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream script(buildScript, ec);
    if (ec) {
      llvm::errs() << "rtx-translate: error: " << buildScript << ": "
                   << ec.message() << "\n";
      return 1;
    }
    rtx::BuildScriptOptions options;
    options.cuda = cuda;
    options.optLevel = optLevel;
    options.cacheDir = programCache;
    rtx::writeBuildScript(script, options);
  }
  return 0;
}
