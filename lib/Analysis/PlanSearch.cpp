//===- PlanSearch.cpp - the auto-partitioner's search ---------------------===//
//
// See PlanSearch.h for the space and why its pruning is safe.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/PlanSearch.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <set>

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::planner;

const char *planner::objectiveName(Objective objective) {
  switch (objective) {
  case Objective::Throughput:
    return "throughput";
  case Objective::Memory:
    return "memory";
  case Objective::ComputeBalanced:
    return "compute-balanced";
  case Objective::Communication:
    return "communication";
  case Objective::Hybrid:
    return "hybrid";
  case Objective::TensorFirst:
    return "tp-first";
  case Objective::PipelineFirst:
    return "pp-first";
  }
  return "?";
}

std::optional<Objective> planner::parseObjective(llvm::StringRef name) {
  for (Objective o : kObjectives)
    if (name == objectiveName(o))
      return o;
  return std::nullopt;
}

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

namespace {
/// Keeps the best `keep` candidates, distinct plans only.
class Best {
public:
  explicit Best(int64_t keep) : keep(std::max<int64_t>(keep, 1)) {}
  void offer(Candidate c) {
    if (int64_t(list.size()) == keep && !(c < list.back()))
      return;
    list.insert(std::upper_bound(list.begin(), list.end(), c), std::move(c));
    if (int64_t(list.size()) > keep)
      list.pop_back();
  }
  bool full() const { return int64_t(list.size()) == keep; }
  const Candidate &worst() const { return list.back(); }
  std::vector<Candidate> list;

private:
  int64_t keep;
};
} // namespace

/// The objective's keys of an estimate; lower is better.
static std::pair<double, double> keys(const Plan &plan, const Estimate &e,
                                      const CostModel &model,
                                      const SearchOptions &options,
                                      double idealTime) {
  switch (options.objective) {
  case Objective::Throughput:
    return {e.stepTime, e.peakMemory};
  case Objective::Memory:
    // Bytes rounded to 1 MiB so that the tie-break on time can act.
    return {std::round(e.peakMemory / double(1 << 20)), e.stepTime};
  case Objective::ComputeBalanced:
    return {std::round(e.imbalance * 1000) / 1000, e.stepTime};
  case Objective::Communication:
    return {e.commTime(), e.stepTime};
  case Objective::Hybrid:
    return {options.weightMemory * e.peakMemory / model.memoryLimit() +
                options.weightCompute * e.stepTime / idealTime +
                options.weightCommunication * e.commTime() / idealTime,
            e.stepTime};
  case Objective::TensorFirst:
    return {-double(std::min(plan.tp, model.hardware().devicesPerNode)),
            e.stepTime};
  case Objective::PipelineFirst:
    return {-double(plan.pp), e.stepTime};
  }
  return {e.stepTime, 0};
}

SearchResult planner::searchPlans(const CostModel &model,
                                  const SearchOptions &options) {
  auto started = std::chrono::steady_clock::now();
  SearchResult result;
  const ModelCosts &base = model.model(false);
  const int64_t n = options.devices;
  const int64_t global = model.costSettings().globalBatch;
  const double limit = model.memoryLimit();
  const HardwareProfile &hw = model.hardware();
  Best best(options.keep);
  // The ideal step time: all the work of one step spread evenly, which no
  // plan beats; it normalises the hybrid objective.
  double idealTime = 0;
  {
    Plan one;
    one.microBatchSize = double(base.modelBatch);
    one.microBatches = std::max<int64_t>(1, global / base.modelBatch);
    Estimate e = model.estimate(one);
    idealTime = std::max(e.pipelineTime / double(n), 1e-12);
  }
  bool timePruning =
      !options.exhaustive && options.objective == Objective::Throughput;

  for (int64_t tp : divisors(n)) {
    if (options.tp && tp != options.tp)
      continue;
    for (bool sp : {false, true}) {
      if ((sp && tp == 1) ||
          (options.sequenceParallel && sp != *options.sequenceParallel))
        continue;
      if (!model.tpDivides(tp, sp)) {
        ++result.prunedByDivisibility;
        continue;
      }
      for (int64_t pp : divisors(n / tp)) {
        if ((options.pp && pp != options.pp) || pp > model.units()) {
          continue;
        }
        int64_t dp = n / (tp * pp);
        if (options.dp && dp != options.dp)
          continue;
        // Micro-batch sizes: the model's batch split over dp, or any
        // divisor of the per-rank share of the global batch.
        std::vector<std::pair<double, int64_t>> sizes; // (size, count)
        if (!options.varyMicroBatch) {
          if (base.modelBatch % dp != 0 || global % base.modelBatch != 0) {
            ++result.prunedByDivisibility;
            continue;
          }
          sizes.push_back({double(base.modelBatch / dp),
                           global / base.modelBatch});
        } else {
          if (global % dp != 0) {
            ++result.prunedByDivisibility;
            continue;
          }
          for (int64_t size : divisors(global / dp))
            sizes.push_back({double(size), global / dp / size});
        }
        for (auto [size, count] : sizes) {
          if (options.microBatchSize && size != double(options.microBatchSize))
            continue;
          for (int64_t v = 1; v <= (pp > 1 ? options.maxVirtualStages : 1);
               v *= 2) {
            if (pp * v > model.units())
              break;
            if (options.virtualStages && v != options.virtualStages)
              continue;
            std::vector<pipeline::ScheduleKind> schedules;
            if (pp == 1)
              schedules = {pipeline::ScheduleKind::OneFOneB};
            else if (v == 1)
              schedules = {pipeline::ScheduleKind::OneFOneB,
                           pipeline::ScheduleKind::GPipe,
                           pipeline::ScheduleKind::ZeroBubbleH1};
            else
              schedules = {pipeline::ScheduleKind::Interleaved};
            for (pipeline::ScheduleKind schedule : schedules) {
              if (options.schedule && pp > 1 && schedule != *options.schedule)
                continue;
              if (pp > 1 && schedule != pipeline::ScheduleKind::GPipe &&
                  count < pp) {
                ++result.prunedByDivisibility;
                continue;
              }
              if (schedule == pipeline::ScheduleKind::Interleaved &&
                  count % pp != 0) {
                ++result.prunedByDivisibility;
                continue;
              }
              for (int64_t zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero) {
                if (options.zero >= 0 && zero != options.zero && dp > 1)
                  continue;
                if (!options.exhaustive &&
                    model.memoryLowerBound(dp, tp, pp, zero) > limit) {
                  ++result.prunedByMemory;
                  continue;
                }
                // The orders that place the axes differently: axes of size
                // 1 do not matter.
                std::set<std::array<int64_t, 3>> layouts;
                for (int o = 0; o < kAxisOrders; ++o) {
                  Plan probe;
                  probe.dp = dp;
                  probe.tp = tp;
                  probe.pp = pp;
                  probe.order = AxisOrder(o);
                  {
                    // Dedupe orders by where each axis' groups lie.
                    std::array<int64_t, 3> layout{};
                    for (int axis = 0; axis < 3; ++axis) {
                      auto [link, oneNode] = model.groupLink(probe, axis);
                      layout[axis] =
                          int64_t(std::distance(
                              hw.linkClasses.begin(),
                              hw.linkClasses.find(link->name))) *
                              2 +
                          oneNode;
                    }
                    if (!layouts.insert(layout).second && !options.exhaustive)
                      continue;
                  }
                  for (Recompute rc : {Recompute::None, Recompute::Selective,
                                       Recompute::Full}) {
                    if (options.recompute && rc != *options.recompute)
                      continue;
                    for (bool overlap : {false, true}) {
                      if (overlap && dp == 1)
                        continue;
                      Plan plan = probe;
                      plan.sequenceParallel = sp;
                      plan.zero = zero;
                      plan.microBatches = count;
                      plan.microBatchSize = size;
                      plan.virtualStages = v;
                      plan.schedule = schedule;
                      plan.recompute = rc;
                      plan.overlap = overlap;
                      ++result.enumerated;
                      if (timePruning && best.full() &&
                          model.timeLowerBound(plan) >= best.worst().primary) {
                        ++result.prunedByTime;
                        continue;
                      }
                      {
                        Estimate e = model.estimate(plan);
                        ++result.evaluated;
                        Candidate c;
                        c.plan = plan;
                        c.estimate = e;
                        if (!e.feasible || (plan.pp > 1 &&
                                            e.imbalance >
                                                options.balanceThreshold)) {
                          ++result.infeasible;
                          if (e.stepTime > 0 &&
                              (!result.leastMemory ||
                               e.peakMemory <
                                   result.leastMemory->estimate.peakMemory))
                            result.leastMemory = c;
                          if (e.feasible &&
                              (!result.leastImbalanced ||
                               e.imbalance < result.leastImbalanced->estimate
                                                 .imbalance))
                            result.leastImbalanced = c;
                          continue;
                        }
                        auto [primary, secondary] =
                            keys(plan, e, model, options, idealTime);
                        c.primary = primary;
                        c.secondary = secondary;
                        best.offer(std::move(c));
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  result.best = std::move(best.list);
  result.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  if (result.best.empty() && !result.leastMemory && !options.exhaustive &&
      result.prunedByMemory > 0) {
    // Every plan was pruned by its memory bound: price them all to say
    // which needs least and by how much it misses.
    SearchOptions all = options;
    all.exhaustive = true;
    SearchResult full = searchPlans(model, all);
    result.leastMemory = full.leastMemory;
    result.leastImbalanced = full.leastImbalanced;
  }
  if (result.best.empty()) {
    if (result.leastMemory &&
        !result.leastMemory->estimate.infeasible.empty() &&
        result.leastMemory->estimate.peakMemory > limit) {
      const Estimate &e = result.leastMemory->estimate;
      double missing = e.peakMemory - limit;
      std::string hint;
      double margin = 1.0 - e.peakMemory / double(hw.memoryBytes);
      if (margin >= 0)
        hint = llvm::formatv("memory-margin={0:f3} (instead of {1}) would "
                             "admit it",
                             std::floor(margin * 1000) / 1000,
                             model.costSettings().memoryMargin);
      else
        hint = llvm::formatv(
            "it exceeds the device's {0} even without a margin: use more "
            "devices (about {1}), or a device with more memory",
            formatBytes(double(hw.memoryBytes)),
            int64_t(std::ceil(double(n) * e.peakMemory /
                              double(hw.memoryBytes))));
      std::string kinds;
      for (int64_t k = 0; k < kMemoryKinds; ++k)
        kinds += llvm::formatv("{0}{1} {2}", k ? ", " : "",
                               memoryKindName(MemoryKind(k)),
                               formatBytes(e.memory[k]));
      result.error = llvm::formatv(
          "no plan of {0} devices fits in memory on '{1}': the plan that "
          "needs the least ({2}) needs {3} per rank ({9}), {4} more than the "
          "limit of {5} ({6} less memory-margin {7}); {8}",
          n, hw.name, result.leastMemory->plan.str(),
          formatBytes(e.peakMemory), formatBytes(missing), formatBytes(limit),
          formatBytes(double(hw.memoryBytes)),
          model.costSettings().memoryMargin, hint, kinds);
    } else if (result.leastImbalanced) {
      result.error = llvm::formatv(
          "no plan of {0} devices is balanced within balance-threshold={1}: "
          "the most even ({2}) has a slowest stage {3:f3}x the mean; a "
          "balance-threshold of {3:f3} would admit it",
          n, options.balanceThreshold, result.leastImbalanced->plan.str(),
          result.leastImbalanced->estimate.imbalance);
    } else if (result.leastMemory) {
      result.error = llvm::formatv("no plan of {0} devices is feasible: {1}",
                                   n, result.leastMemory->estimate.infeasible);
    } else {
      result.error = llvm::formatv(
          "no plan of {0} devices divides the model: each tp degree must "
          "divide the dimensions it splits, dp the batch of {1} "
          "sequence(s), and the global batch of {2} the micro-batches",
          n, base.modelBatch, global);
    }
  }
  return result;
}

std::string planner::whyLost(const Candidate &winner, const Candidate &loser,
                             Objective objective) {
  const Estimate &w = winner.estimate, &l = loser.estimate;
  double slower = (l.stepTime / w.stepTime - 1.0) * 100.0;
  struct Part {
    const char *what;
    double delta;
  };
  double wBubble = w.pipelineTime - w.computeTime - w.tensorCommTime;
  double lBubble = l.pipelineTime - l.computeTime - l.tensorCommTime;
  Part parts[] = {
      {"compute", (l.computeTime - l.recomputeTime) -
                      (w.computeTime - w.recomputeTime)},
      {"recompute", l.recomputeTime - w.recomputeTime},
      {"tensor-parallel communication", l.tensorCommTime - w.tensorCommTime},
      {"pipeline bubble and sends", lBubble - wBubble},
      {"exposed data-parallel communication",
       l.exposedDataCommTime - w.exposedDataCommTime},
      {"optimizer step", l.optimizerTime - w.optimizerTime},
  };
  const Part *largest = &parts[0];
  for (const Part &p : parts)
    if (p.delta > largest->delta)
      largest = &p;
  std::string why;
  if (objective != Objective::Throughput &&
      (loser.primary != winner.primary))
    why = llvm::formatv("worse {0} objective ({1:g4} vs {2:g4}); ",
                        objectiveName(objective), loser.primary,
                        winner.primary);
  if (slower > 0.05)
    why += llvm::formatv("{0:f1}% slower: {1:f2} ms more {2}", slower,
                         largest->delta * 1e3, largest->what);
  else if (l.peakMemory > w.peakMemory)
    why += llvm::formatv("as fast, {0:f1} MiB more memory per rank",
                         (l.peakMemory - w.peakMemory) / double(1 << 20));
  else
    why += "as fast; a later tie-break";
  return why;
}
