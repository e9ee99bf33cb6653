//===- BuildScript.cpp - the shell script that builds an emitted program --===//

#include "BuildScript.h"

#include "rtx/Target/BuildConfig.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

using namespace mlir;
using namespace mlir::rtx;

// The static libraries of a link line: their code is copied into the binary,
// so a cached binary is stale once they change (shared ones are not: they are
// loaded when the program runs).
static std::string staticLibraries(llvm::StringRef linkLine) {
  llvm::SmallVector<llvm::StringRef> words;
  linkLine.split(words, ' ', -1, /*KeepEmpty=*/false);
  llvm::SetVector<llvm::StringRef> libraries;
  for (llvm::StringRef word : words)
    if (word.ends_with(".a"))
      libraries.insert(word);
  return llvm::join(libraries, " ");
}

// build SOURCE OUTPUT: the compile and link command, as a shell function.
static void writeBuildFunction(llvm::raw_ostream &os,
                               const BuildScriptOptions &options) {
  std::string level = "-O" + std::to_string(options.optLevel);
  std::string hostCompile = std::string(RTX_PROGRAM_CXX) + " -std=c++17 " +
                            level + " -I" + RTX_PROGRAM_INCLUDE;
  if (!options.cuda) {
    os << "build() {\n  " << hostCompile << " \"$1\" -o \"$2\" "
       << RTX_PROGRAM_LIBS << "\n}\n";
    return;
  }
  std::string nvcc = RTX_PROGRAM_NVCC;
  os << "build() {\n  if [ \"$mode\" = emulation ]; then\n    " << hostCompile
     << " -x c++ \"$1\" -x none -o \"$2\" " << RTX_PROGRAM_GPU_EMULATION_LIBS
     << "\n    return\n  fi\n";
  if (nvcc.empty()) {
    os << "  echo \"$0: rtx was built without CUDA (no nvcc found); set "
          "RTX_GPU_EMULATION=1 to build for the host emulation\" >&2\n"
          "  return 1\n}\n";
    return;
  }
  // nvcc picks the language from the file name and has no "-x none" to end
  // a -x, so the source is compiled from a copy named .cu.
  os << "  cp \"$1\" \"$2.cu\" && " << nvcc << " " << level << " -I"
     << RTX_PROGRAM_INCLUDE << " \"$2.cu\" -o \"$2\" " << RTX_PROGRAM_CUDA_LIBS
     << "\n  status=$?\n  rm -f \"$2.cu\"\n  return $status\n}\n";
}

void rtx::writeBuildScript(llvm::raw_ostream &os,
                           const BuildScriptOptions &options) {
  os << "#!/bin/sh\n# Builds a " << (options.cuda ? "CUDA " : "")
     << "program emitted by rtx-translate: sh SCRIPT program."
     << (options.cuda ? "cu" : "cpp") << " program\n";
  if (options.cuda)
    os << "# RTX_GPU_EMULATION=1 builds it against the host emulation of the "
          "GPU runtime\n# (no GPU needed; see rtxrt/device/Gpu.h).\n";
  os << "# The program's code is compiled at -O" << options.optLevel
     << " (rtx-translate --opt-level); the runtime it\n# calls is built "
        "optimised. A binary built before from the same source, this\n"
        "# script and the same runtime is taken from the cache "
        "(--program-cache).\nset -e\n"
        "if [ $# -ne 2 ]; then echo \"usage: sh $0 SOURCE PROGRAM\" >&2; "
        "exit 2; fi\n";
  // The mode, and the static libraries its binary embeds (the cache key).
  if (options.cuda)
    os << "if [ \"${RTX_GPU_EMULATION:-0}\" = 1 ]; then\n  mode=emulation "
          "embedded='"
       << staticLibraries(RTX_PROGRAM_GPU_EMULATION_LIBS)
       << "'\nelse\n  mode=cuda embedded='"
       << staticLibraries(RTX_PROGRAM_CUDA_LIBS) << "'\nfi\n";
  else
    os << "mode=cpu embedded='" << staticLibraries(RTX_PROGRAM_LIBS)
       << "'\n";
  writeBuildFunction(os, options);
  if (options.cacheDir.empty()) {
    os << "build \"$1\" \"$2\"\n";
    return;
  }
  // The key: the mode, the source, this script (compiler, flags, libraries),
  // the static libraries and the runtime's headers.
  os << "cache='" << options.cacheDir << "'\n"
     << "key=$({ echo \"$mode\"; cat \"$1\" \"$0\" $embedded && find '" << RTX_PROGRAM_INCLUDE
     << "' -type f | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-64)\n"
     << "rm -f \"$2\"\n"
     << "if cp \"$cache/$key\" \"$2\" 2>/dev/null; then touch \"$cache/$key\"; "
        "exit 0; fi\n"
     << "mkdir -p \"$cache\"\n"
     << "tmp=\"$cache/$key.$$.tmp\"\n"
     << "build \"$1\" \"$tmp\" || { rm -f \"$tmp\"; exit 1; }\n"
     << "mv -f \"$tmp\" \"$cache/$key\"\n"
     << "cp \"$cache/$key\" \"$2\"\n"
     << "# The cache keeps the " << kProgramCacheEntries
     << " binaries used last.\n"
     << "ls -t \"$cache\" | tail -n +" << kProgramCacheEntries + 1
     << " | (cd \"$cache\" && xargs rm -f)\n";
}
