//===- ShardUnit.h - which flat buffer a parameter joins ---------*- C++ -*-===//
//
// rtx-shard-state packs the parameters of one unit into one flat buffer per
// rank and moves each buffer with one collective; the planner prices those
// collectives per buffer. Both find a parameter's unit here, so the count
// the planner prices is the count the pass makes.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_SHARDUNIT_H
#define RTX_ANALYSIS_SHARDUNIT_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::rtx {

/// The unit of the parameter `name` under the name-based policies of
/// rtx-shard-state's `unit` option: "param" (each parameter alone), "all"
/// (one buffer), "block" (the name up to its first layer index,
/// "transformer.h.3.attn.c_attn.weight" -> "transformer.h.3"; parameters
/// outside any layer share "root").
std::string shardUnitOf(llvm::StringRef name, llvm::StringRef policy);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_SHARDUNIT_H
