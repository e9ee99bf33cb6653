//===- Growth.h - a job that grows by offered ranks -------------*- C++ -*-===//
//
// A node offers ranks to a running job (rtx-launch --join K, through the
// store: rtxrt::GrowthBoard); a launch of the job below --max-ranks takes
// each offer once, in order, and grows by it at the next step boundary
// (its ranks are pre-empted and started again with more).
//
// Invariant: an offer grows one launch of the run id once, also across
// launches (a second train call passes over the offers an earlier one took).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_GROWTH_H
#define RTX_TOOLS_RTX_LAUNCH_GROWTH_H

#include "LaunchOptions.h"

#include "rtxrt/elastic/GrowthBoard.h"

#include <cstdint>
#include <optional>
#include <string>

namespace rtxlaunch {

class Growth {
public:
  /// Throws rtxrt::Error when the store is out of reach or of no kind the
  /// board knows.
  Growth(const Options &options, const std::string &runId);

  /// The ranks to grow by, when an offer not taken yet is there and this
  /// launch took it; `mayTake` false (the ranks are still meeting) only
  /// reads. `ranks`: this launch's ranks now.
  std::optional<int> takeOffer(int ranks, bool mayTake);

  /// rtx-launch --join K: offers K ranks to the job --run-id; the exit
  /// status of the launch.
  static int offer(const Options &options);

private:
  const Options &options_;
  rtxrt::GrowthBoard board_;
  /// The offers before this one were taken, by this launch or another.
  int64_t offersTaken_ = 0;
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_GROWTH_H
