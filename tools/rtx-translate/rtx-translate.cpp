//===- rtx-translate.cpp - emit programs from rtx IR ----------------------===//
//
//   rtx-translate --emit=cpp|cuda TRAIN.mlir -o program.cpp [--build-script
//   build.sh]
//
// Turns a training step (after rtx-optimizer, and rtx-partition for several
// ranks) into a C++ or CUDA program linking librtxrt; the build script
// compiles it on this machine (`sh build.sh program.cpp program`). A CUDA
// build script uses nvcc and librtxrt_cuda; with RTX_GPU_EMULATION=1 it
// builds the same program against the host emulation of the GPU runtime,
// which runs without a GPU.
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
static cl::opt<std::string> emit("emit",
                                 cl::desc("Target: cpp (CPU kernels, Gloo) or "
                                          "cuda (cuBLAS, CUDA kernels, NCCL)"),
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rtx-translate: emit a program from rtx IR\n");
  if (emit != "cpp" && emit != "cuda") {
    llvm::errs() << "rtx-translate: error: --emit=" << emit
                 << " is not a target: use --emit=cpp or --emit=cuda\n";
    return 1;
  }
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
      llvm::errs() << "rtx-translate: error: " << ec.message() << "\n";
      return 1;
    }
    if (!cuda) {
      script << "#!/bin/sh\n# Builds a program emitted by rtx-translate: "
                "sh SCRIPT program.cpp program\nset -e\nexec "
             << RTX_PROGRAM_CXX << " -std=c++17 -O2 -I" << RTX_PROGRAM_INCLUDE
             << " \"$1\" -o \"$2\" " << RTX_PROGRAM_LIBS << "\n";
    } else {
      std::string nvcc = RTX_PROGRAM_NVCC;
      script << "#!/bin/sh\n# Builds a CUDA program emitted by rtx-translate: "
                "sh SCRIPT program.cu program\n"
                "# RTX_GPU_EMULATION=1 builds it against the host emulation "
                "of the GPU runtime\n# (no GPU needed; see rtxrt/Gpu.h).\n"
                "set -e\n"
                "if [ \"${RTX_GPU_EMULATION:-0}\" = 1 ]; then\n  exec "
             << RTX_PROGRAM_CXX << " -std=c++17 -O2 -I" << RTX_PROGRAM_INCLUDE
             << " -x c++ \"$1\" -x none -o \"$2\" "
             << RTX_PROGRAM_GPU_EMULATION_LIBS << "\nfi\n";
      if (nvcc.empty())
        script << "echo \"$0: rtx was built without CUDA (no nvcc found); "
                  "set RTX_GPU_EMULATION=1 to build for the host emulation\" "
                  ">&2\nexit 1\n";
      else
        // nvcc picks the language from the file name and has no "-x none"
        // to end a -x, so a source not named .cu is copied to one.
        script << "src=\"$1\"\ncase \"$src\" in *.cu) ;; *) src=\"$2.cu\"; "
                  "cp \"$1\" \"$src\" ;; esac\nexec "
               << nvcc << " -I" << RTX_PROGRAM_INCLUDE << " \"$src\" -o \"$2\" "
               << RTX_PROGRAM_CUDA_LIBS << "\n";
    }
  }
  return 0;
}
