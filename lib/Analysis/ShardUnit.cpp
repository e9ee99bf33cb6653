//===- ShardUnit.cpp - which flat buffer a parameter joins ----------------===//
//
// See ShardUnit.h.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/ShardUnit.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

std::string mlir::rtx::shardUnitOf(llvm::StringRef name,
                                   llvm::StringRef policy) {
  if (policy == "param")
    return name.str();
  if (policy == "all")
    return "all";
  // The name up to its first all-digit component that is neither the first
  // nor the last ("transformer.h.3.attn.c_attn.weight" -> "transformer.h.3").
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '.');
  size_t length = 0;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    length += parts[i].size() + (i ? 1 : 0);
    if (i > 0 && !parts[i].empty() &&
        llvm::all_of(parts[i], [](char c) { return llvm::isDigit(c); }))
      return name.take_front(length).str();
  }
  return "root";
}
