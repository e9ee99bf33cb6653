//===- MemoryPlan.h - a step's peak memory per rank, by kind ----*- C++ -*-===//
//
// Static liveness over the final per-rank step function, as the emitted
// program runs it (lib/Target/TranslateToCpp.cpp releases every tensor at
// the point stepLiveness() gives): the step's arguments (parameters,
// optimizer state, the batch) are held for the whole step by the loop that
// calls it; a computed tensor lives from its op to its release; a view
// (ViewLikeOpInterface: rtx.reshape) shares its source's buffer. Each
// buffer is counted as the host allocator hands it out (runtime/lib/
// Tensor.cpp: 64-byte granules, 2 MiB pages from 32 MiB on), so the peak is
// what the allocator's counters measure (the metrics' step_peak_bytes).
// rtx-plan-memory prints it; the memory gate (scripts/memory-gate.py)
// compares it with the measured peak.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_MEMORYPLAN_H
#define RTX_ANALYSIS_MEMORYPLAN_H

#include "rtx/Analysis/ProgramDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <cstdint>
#include <string>

namespace mlir::rtx {

/// Where the emitted step releases each computed tensor: after the op that
/// uses it last or, for an operand of a started (token-producing) op, after
/// the wait of that token, since the collective may read it until then.
/// Arguments, `rtx.input`s, constants and returned values are never
/// released (the caller holds them).
struct StepLiveness {
  /// The body's ops in program order, and each op's place in it.
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
  /// The op after which each released tensor goes.
  llvm::DenseMap<Value, Operation *> releaseOp;
  /// For each op, the tensors released after it, in the order they were
  /// computed.
  llvm::DenseMap<Operation *, SmallVector<Value>> releasedAfter;
};
StepLiveness stepLiveness(Block &body);

/// What a byte of a step holds.
enum class MemoryKind {
  Parameters,     // parameters (and their new values)
  Gradients,      // parameter gradients, whole, bucketed or sharded
  OptimizerState, // Adam's moments (and their new values)
  Activations,    // the batch and the forward pass's tensors
  Communication,  // results of collectives (gathered parameters, received)
  Temporaries,    // the backward pass's other tensors, the optimizer's scratch
};
constexpr int64_t kMemoryKinds = 6;
/// "parameters", "gradients", "optimizer_state", ... (the report's keys).
const char *memoryKindName(MemoryKind kind);

/// The bytes the host allocator reserves for a tensor of `bytes`.
int64_t allocatedBytes(int64_t bytes);

struct MemoryPlan {
  /// The most bytes held at once, and when: the op during whose execution
  /// (its results allocated, its operands not yet released) it is reached.
  int64_t peakBytes = 0;
  Operation *peakOp = nullptr;
  /// The peak split by kind (sums to peakBytes).
  std::array<int64_t, kMemoryKinds> peakByKind{};
  /// The bytes held by the arguments alone (the whole step long).
  int64_t argumentBytes = 0;
};

/// The plan of `program`'s step function, as its rank runs it.
MemoryPlan planMemory(const ProgramDescription &program);

/// The offload slots a step needs (rtx-shard-state{offload}): the most
/// fetched buffers it holds at once, from the start of each read to the
/// release of the value it yields, plus two writes in flight. The runtime
/// bounds its buffers in flight by this number, so the program's own order
/// can never wait for a slot that only it could free. 0 without offload.
int64_t offloadSlots(Block &body);

/// A table a person reads: one row per kind, bytes and share of the peak.
std::string formatMemoryPlan(const MemoryPlan &plan);

} // namespace mlir::rtx

#endif // RTX_ANALYSIS_MEMORYPLAN_H
