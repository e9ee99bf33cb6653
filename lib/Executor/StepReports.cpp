//===- StepReports.cpp - rtx-run's per-step loss and time -----------------===//

#include "StepReports.h"

#include "Reassembly.h"

using namespace mlir;
using namespace mlir::rtx;

StepReports::StepReports(const ExecutorOptions &options,
                         const StepPrograms &step, int64_t numRanks,
                         int64_t tokens)
    : options_(options), step_(step), metrics_(options.metricsPath),
      tokens_(tokens),
      localLosses_(options.steps, std::vector<double>(numRanks, 0.0)),
      stepMs_(options.steps, 0.0) {
  ShardingAttr sharding = step.lossSharding();
  live_ =
      step.lossIndex() < 0 || !sharding || sharding.getPartialAxes().empty();
  reportingRank_ =
      step.withCoordinate(0, std::max<int64_t>(step.lossOwner(), 0));
}

rtxrt::StepRecord StepReports::recordOf(int64_t step, double loss) const {
  rtxrt::StepRecord record;
  record.step = step + 1;
  record.globalStep = step + 1; // rtx-run counts its own steps only
  record.hasLoss = step_.lossIndex() >= 0;
  record.loss = loss;
  record.ms = stepMs_[step];
  return record;
}

void StepReports::report(const rtxrt::StepRecord &record) {
  metrics_.step(record, rtxrt::tokensPerSecond(tokens_, record.ms));
  if (options_.onStep)
    options_.onStep(record);
}

void StepReports::stepDone(int64_t rank, int64_t step, double localLoss,
                           double ms) {
  // Each rank writes its own slot; the run's end joins the threads.
  localLosses_[step][rank] = localLoss;
  if (rank != reportingRank_)
    return;
  stepMs_[step] = ms;
  if (live_)
    report(recordOf(step, localLoss));
}

std::vector<double> StepReports::finish() {
  std::vector<double> losses;
  if (step_.lossIndex() < 0)
    return losses;
  for (int64_t step = 0; step < options_.steps; ++step) {
    double loss = Reassembly::globalScalar(
        step_, localLosses_[step], step_.lossOwner(), step_.lossSharding());
    losses.push_back(loss);
    if (!live_)
      report(recordOf(step, loss));
  }
  return losses;
}
