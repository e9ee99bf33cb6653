//===- Growth.cpp - a job that grows by offered ranks ---------------------===//

#include "Growth.h"

#include "LauncherProcess.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <cstdio>

using namespace rtxlaunch;

Growth::Growth(const Options &options, const std::string &runId)
    : options_(options), board_(options.store, runId) {}

std::optional<int> Growth::takeOffer(int ranks, bool mayTake) {
  std::optional<int64_t> offered;
  try {
    // Offers an earlier launch of this run id took are passed over.
    while ((offered = board_.offer(offersTaken_)) &&
           board_.offerTaken(offersTaken_))
      ++offersTaken_;
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: warning: %s; ignoring it\n",
                 error.what());
    offered.reset();
    ++offersTaken_;
  }
  if (!offered || !mayTake)
    return std::nullopt;
  bool mine = true;
  try {
    mine = board_.takeOffer(offersTaken_, launcherName());
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
  }
  if (!mine) {
    // Another launch of this run id took it a moment before.
    ++offersTaken_;
    return std::nullopt;
  }
  int by =
      static_cast<int>(std::min<int64_t>(*offered, options_.maxRanks - ranks));
  std::fprintf(stderr,
               "rtx-launch: growing: a node offered %lld rank(s) "
               "(join.%lld); pre-empting the %d rank(s) to start "
               "again with %d\n",
               static_cast<long long>(*offered),
               static_cast<long long>(offersTaken_), ranks, ranks + by);
  ++offersTaken_;
  return by;
}

int Growth::offer(const Options &options) {
  try {
    rtxrt::GrowthBoard board(options.store, options.runId);
    int64_t n = board.offerRanks(options.join, launcherName());
    std::fprintf(
        stderr, "rtx-launch: offered %d rank(s) to run %s (join.%lld)\n",
        options.join, options.runId.c_str(), static_cast<long long>(n));
    return 0;
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
    return 1;
  }
}
