//===- BuildScript.h - the shell script that builds an emitted program ----===//
//
// rtx-translate --build-script writes a POSIX shell script next to a program:
// `sh build.sh program.cpp program` compiles and links it on this machine.
// The script reuses a binary built before from the same inputs: it hashes the
// source, the script itself (compiler, flags, libraries) and what the binary
// embeds from rtx (the static runtime libraries and the runtime's headers),
// and keeps binaries under that key in a cache folder (by default the build
// folder's program-cache/). Tests that build the same program for several
// checks then compile it once (docs/codegen.md, "Build scripts").
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_TRANSLATE_BUILDSCRIPT_H
#define RTX_TOOLS_RTX_TRANSLATE_BUILDSCRIPT_H

#include "llvm/Support/raw_ostream.h"
#include <string>

namespace mlir::rtx {

// How many binaries a program cache keeps (the ones used last): a test run
// builds about a hundred distinct programs.
constexpr unsigned kProgramCacheEntries = 300;

struct BuildScriptOptions {
  bool cuda = false;
  // -O level of the program's own code; the runtime it calls is built
  // optimised whatever this is (docs/benchmarks.md, "Program build level").
  unsigned optLevel = 0;
  // Folder of built binaries keyed by their inputs; empty: no cache.
  std::string cacheDir;
};

void writeBuildScript(llvm::raw_ostream &os, const BuildScriptOptions &options);

} // namespace mlir::rtx

#endif // RTX_TOOLS_RTX_TRANSLATE_BUILDSCRIPT_H
