//===- CollectiveTiming.h - alpha-beta of each collective per group size -*-=//
//
// Times the collectives of rtx's distribution ops through the communicator
// emitted programs use (rtxrt::Communicator::run over Gloo's TCP transport),
// on flat f32 buffers split along dimension 0 (ZeRO's and DDP's buckets: the
// path that calls Gloo's ring all-reduce and all-gather directly), at each
// message size, for each group size that divides the world. All groups of a
// size run at once, as a mesh axis's groups do in a step. The time of a
// call is the slowest rank's; a size's time is the mean over every call timed.
//
// Message size n is the bytes of the full tensor: all_reduce's operand,
// all_gather's result, reduce_scatter's operand, send's message (the cost
// model's convention). send_recv is timed as a ping-pong between ranks
// (2i, 2i + 1); its time is half the round trip.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_CALIBRATE_COLLECTIVETIMING_H
#define RTX_TOOLS_RTX_CALIBRATE_COLLECTIVETIMING_H

#include "AlphaBetaFit.h"
#include "Session.h"

#include <string>
#include <vector>

namespace rtx::calibrate {

struct CollectivePlan {
  /// Bytes of the full tensor, ascending.
  std::vector<int64_t> sizes;
  TimingPlan timing;
  /// Seconds every rank computes (computeFor) before each timed call, as a
  /// program's step computes between its collectives; 0: back to back.
  double computeGapSeconds = 0;
};

/// 4 KiB to 64 MiB by factors of 4; --quick: 4 KiB, 64 KiB, 1 MiB, 4 MiB.
std::vector<int64_t> defaultMessageSizes(bool quick);

struct CollectiveFit {
  std::string op; // "all_reduce", "all_gather", "reduce_scatter", "send_recv"
  int64_t ranks = 0;
  /// Groups of this size that ran at the same time (world / ranks).
  int64_t concurrentGroups = 1;
  std::vector<Sample> samples;
  AlphaBeta fit;
  /// Sizes the time budget left out.
  std::vector<int64_t> skipped;
};

/// Every rank calls it (one rank: nothing to measure). Sizes are taken in
/// ascending order while the time predicted from the previous size fits in
/// an equal share of what is left before `deadline`.
std::vector<CollectiveFit> measureCollectives(Session &session,
                                              const CollectivePlan &plan,
                                              double deadline);

} // namespace rtx::calibrate

#endif // RTX_TOOLS_RTX_CALIBRATE_COLLECTIVETIMING_H
