//===- PlanSearch.h - the auto-partitioner's search -------------*- C++ -*-===//
//
// Enumerates the plans of a device count — dp x tp x pp, sequence
// parallelism, ZeRO stage, micro-batch count and size, virtual stages,
// schedule, recompute, overlap and the order of the mesh axes over the
// devices — prices each with the CostModel and keeps the best under an
// objective, with a memory margin and a stage balance threshold.
//
// Pruning is proven safe, so the search returns the exhaustive optimum (a
// unit test enumerates without pruning and compares):
// - divisibility first: a tp degree must divide every dimension tp splits;
//   pp x v at most the units; the batch must divide as the plan needs;
// - memory: parameters, gradients and optimizer state alone (a lower bound
//   of any plan with those degrees and ZeRO stage) over the limit prune the
//   whole subtree;
// - time (throughput objective): micro-batches x the compute of all units
//   over pp is a lower bound of any pipeline's time; a subtree whose bound
//   is no better than the best plan found is skipped.
// Stage splitting inside a plan is exact (min-max contiguous partition by
// bisection).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PLANSEARCH_H
#define RTX_ANALYSIS_PLANSEARCH_H

#include "rtx/Analysis/PlanCost.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::rtx::planner {

enum class Objective {
  Throughput,      // fastest step within the memory limit (the default)
  Memory,          // least memory per rank, then fastest
  ComputeBalanced, // most even stages, then fastest
  Communication,   // least communication time, then fastest
  Hybrid,          // weighted memory, compute and communication
  TensorFirst,     // the largest tp inside a node, then fastest
  PipelineFirst,   // the largest pp, then fastest
};
constexpr Objective kObjectives[] = {
    Objective::Throughput,    Objective::Memory,      Objective::ComputeBalanced,
    Objective::Communication, Objective::Hybrid,      Objective::TensorFirst,
    Objective::PipelineFirst};
/// "throughput", "memory", "compute-balanced", "communication", "hybrid",
/// "tp-first", "pp-first".
const char *objectiveName(Objective objective);
std::optional<Objective> parseObjective(llvm::StringRef name);

struct SearchOptions {
  int64_t devices = 1;
  Objective objective = Objective::Throughput;
  double balanceThreshold = 1.2;
  /// Hybrid: weights of memory (peak over the limit), compute (step time
  /// over the ideal) and communication (its time over the ideal).
  double weightMemory = 1, weightCompute = 1, weightCommunication = 1;
  /// Also try per-rank micro-batch sizes other than the model's batch over
  /// dp (the plan then needs the model written for that batch).
  bool varyMicroBatch = false;
  /// Choices fixed by the user (0, -1 or empty: searched): to price a given
  /// plan, or to search around it.
  int64_t dp = 0, tp = 0, pp = 0;
  int64_t zero = -1;
  int64_t microBatchSize = 0;
  int64_t virtualStages = 0;
  std::optional<bool> sequenceParallel;
  std::optional<Recompute> recompute;
  std::optional<pipeline::ScheduleKind> schedule;
  int64_t maxVirtualStages = 4;
  /// Plans kept, best first.
  int64_t keep = 5;
  /// Without pruning (the tests' reference).
  bool exhaustive = false;
};

struct Candidate {
  Plan plan;
  Estimate estimate;
  double primary = 0, secondary = 0; // the objective's keys, lower is better
  bool operator<(const Candidate &o) const {
    return primary != o.primary ? primary < o.primary
                                : secondary < o.secondary;
  }
};

struct SearchResult {
  /// Best first; empty when no plan is feasible.
  std::vector<Candidate> best;
  int64_t enumerated = 0; // plans the loops reached (pruned subtrees out)
  int64_t evaluated = 0;  // plans priced
  int64_t prunedByMemory = 0, prunedByTime = 0, prunedByDivisibility = 0;
  int64_t infeasible = 0; // priced but over memory or balance
  /// With no feasible plan: the plan needing least memory, and the most
  /// even pipeline plan refused only for balance.
  std::optional<Candidate> leastMemory;
  std::optional<Candidate> leastImbalanced;
  double seconds = 0;
  /// Why no plan fits (how much memory is missing, and which objective or
  /// margin would change it); empty when one does.
  std::string error;
};

SearchResult searchPlans(const CostModel &model, const SearchOptions &options);

/// Why `loser` lost to `winner`, in a few words ("+12% step time: 3.1 ms
/// more pipeline bubble").
std::string whyLost(const Candidate &winner, const Candidate &loser,
                    Objective objective);

} // namespace mlir::rtx::planner

#endif // RTX_ANALYSIS_PLANSEARCH_H
