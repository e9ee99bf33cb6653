//===- StepReports.h - rtx-run's per-step loss and time ---------*- C++ -*-===//
//
// Each step is reported (ExecutorOptions::onStep, the metrics file) as the
// loss's first rank finishes it, unless its loss holds partial sums: that
// one is assembled from every rank after the run, and all steps are
// reported then.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_EXECUTOR_STEPREPORTS_H
#define RTX_LIB_EXECUTOR_STEPREPORTS_H

#include "StepPrograms.h"

#include "rtx/Executor/Executor.h"
#include "rtxrt/observe/MetricsFile.h"

#include <vector>

namespace mlir::rtx {

class StepReports {
public:
  /// Opens the metrics file. `tokens`: the tokens of one step (0: none).
  StepReports(const ExecutorOptions &options, const StepPrograms &step,
              int64_t numRanks, int64_t tokens);

  /// Does `rank` return the loss (is it of the loss's coordinate)?
  bool holdsLoss(int64_t rank) const {
    return step_.coordinateOf(rank) == step_.lossOwner();
  }
  /// `rank` finished step `step` (0-based) with `localLoss` (0 when it holds
  /// none) in `ms` of interpretation. Called from the rank's thread.
  void stepDone(int64_t rank, int64_t step, double localLoss, double ms);
  /// After the run: every step's loss (empty without one); reports the
  /// steps not reported live.
  std::vector<double> finish();

private:
  rtxrt::StepRecord recordOf(int64_t step, double loss) const;
  void report(const rtxrt::StepRecord &record);

  const ExecutorOptions &options_;
  const StepPrograms &step_;
  rtxrt::MetricsFile metrics_;
  int64_t tokens_;
  /// Is each step reported as it ends (the loss has no partial sums)?
  bool live_;
  /// The rank whose time (and, live, whose loss) is reported.
  int64_t reportingRank_;
  /// Per step, per rank: the local loss; per step, the reporting rank's
  /// time.
  std::vector<std::vector<double>> localLosses_;
  std::vector<double> stepMs_;
};

} // namespace mlir::rtx

#endif // RTX_LIB_EXECUTOR_STEPREPORTS_H
