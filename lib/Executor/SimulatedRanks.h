//===- SimulatedRanks.h - ranks as threads of rtx-run -----------*- C++ -*-===//

#ifndef RTX_LIB_EXECUTOR_SIMULATEDRANKS_H
#define RTX_LIB_EXECUTOR_SIMULATEDRANKS_H

#include "rtxrt/program/Program.h"

#include <functional>

namespace mlir::rtx {

/// What one rank does, given the communicator through which it reaches the
/// others.
using RankBody = std::function<void(int64_t rank, rtxrt::Communicator &)>;

/// Runs `body` for each of `numRanks` ranks: one rank on the calling thread
/// over a local communicator, several each on its own thread over an
/// in-process world whose collectives wait at most `timeoutSeconds`. Throws
/// the root cause when a rank fails (not the errors of the ranks it
/// stopped), or when threads run out.
void runSimulatedRanks(int64_t numRanks, double timeoutSeconds,
                       const RankBody &body);

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_SIMULATEDRANKS_H
