//===- SimulatedRanks.cpp - ranks as threads of rtx-run -------------------===//

#include "SimulatedRanks.h"

#include "rtxrt/comm/InProcessCommunicator.h"

#include <system_error>
#include <thread>

using namespace mlir::rtx;
using rtxrt::Error;

/// The first error of `errors`, preferring a root cause to "stopped
/// because" reports of the ranks it stopped; empty when none.
static std::string rootCause(const std::vector<std::string> &errors) {
  std::string first;
  for (const std::string &error : errors) {
    if (error.empty())
      continue;
    if (first.empty() || first.rfind("stopped because", 0) == 0)
      first = error;
  }
  return first;
}

void mlir::rtx::runSimulatedRanks(int64_t numRanks, double timeoutSeconds,
                                  const RankBody &body) {
  if (numRanks == 1) {
    std::unique_ptr<rtxrt::Communicator> local = rtxrt::makeLocalCommunicator();
    body(0, *local);
    return;
  }
  rtxrt::InProcessWorld world(numRanks, timeoutSeconds);
  std::vector<std::string> errors(numRanks);
  std::vector<std::thread> threads;
  std::string startError;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    try {
      threads.emplace_back([&, rank] {
        try {
          std::unique_ptr<rtxrt::Communicator> comm = world.communicator(rank);
          body(rank, *comm);
          world.finish(rank);
        } catch (const std::exception &error) {
          errors[rank] = error.what();
          world.abort(rank, error.what());
        }
      });
    } catch (const std::system_error &error) {
      // Out of threads: stop the ranks that started (they would wait for
      // the missing ones) and say why, instead of std::terminate.
      startError = "cannot start simulated rank " + std::to_string(rank) +
                   " of " + std::to_string(numRanks) + ": " + error.what() +
                   " (fewer --ranks, or raise the thread limit)";
      world.abort(rank, startError);
      break;
    }
  }
  for (std::thread &thread : threads)
    thread.join();
  if (!startError.empty())
    throw Error(startError);
  if (std::string first = rootCause(errors); !first.empty())
    throw Error(first);
}
