//===- PipelineSchedule.h - pipeline schedules as data ----------*- C++ -*-===//
//
// A pipeline schedule is an explicit list of actions for each rank, in the
// order that rank runs them. It is printed and parsed as text, one line per
// rank, so that a test can write a schedule by hand and a person can read
// one:
//
//   rank 0: 0F0 0F1 0SEND_F0 ... 0B0 0W0 0REDUCE_GRAD OPTIMIZER
//
// An action is `<stage><kind><micro-batch>`:
// - `F` forward;
// - `B` backward (the input gradient only, when the stage's schedule also
//   has `W`);
// - `W` weight gradient (zero-bubble schedules);
// - `SEND_F`/`RECV_F` the activation to / from the next / previous stage;
// - `SEND_B`/`RECV_B` the gradient to / from the previous / next stage.
// Per stage, `<stage>REDUCE_GRAD` is the gradient reduction. Per rank,
// `OPTIMIZER` is the optimizer step.
//
// Stage s of p ranks with v virtual stages per rank runs on rank s % p
// (Megatron's interleaving: rank r holds stages r, r + p, ...).
//
// The generators write GPipe, 1F1B, interleaved 1F1B and ZB-H1 schedules.
// simulate() runs any schedule under a cost per action and proves it sound
// before codegen:
// - every receive has its send, and no two ranks wait on each other;
// - every micro-batch is forwarded before its backward, and every weight
//   gradient comes after its input gradient;
// - the counts balance.
// It also reports the bubble fraction and the peak number of live
// activations per stage. Otherwise it returns diagnostics that name the
// rank, the action and why.
//
// rtx-pipeline generates or reads a schedule, simulates it, and builds the
// per-rank programs from it (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PIPELINESCHEDULE_H
#define RTX_ANALYSIS_PIPELINESCHEDULE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::rtx::pipeline {

enum class ActionKind {
  Forward,
  Backward, // the input gradient (and the weight gradient without W)
  Weight,   // the weight gradient, split off for zero-bubble schedules
  SendForward,
  RecvForward,
  SendBackward,
  RecvBackward,
  ReduceGrad,
  Optimizer
};

struct Action {
  ActionKind kind = ActionKind::Forward;
  int64_t stage = 0;      // -1 for OPTIMIZER
  int64_t microBatch = 0; // -1 for REDUCE_GRAD and OPTIMIZER
  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && microBatch == o.microBatch;
  }
  bool operator<(const Action &o) const {
    return std::tie(kind, stage, microBatch) <
           std::tie(o.kind, o.stage, o.microBatch);
  }
  /// "2F0", "1SEND_B3", "0REDUCE_GRAD", "OPTIMIZER".
  std::string str() const;
};

/// The actions of every rank, in order.
struct Schedule {
  int64_t ranks = 0;
  int64_t stagesPerRank = 1; // virtual stages
  int64_t microBatches = 0;
  std::vector<std::vector<Action>> actions; // [rank]
  int64_t stages() const { return ranks * stagesPerRank; }
  int64_t rankOf(int64_t stage) const { return stage % ranks; }
  /// One line per rank, "rank R: A A A".
  std::string str() const;
};

/// A problem with a schedule, at `rank`'s action `index` (-1: the schedule
/// as a whole).
struct Diagnostic {
  int64_t rank = -1;
  int64_t index = -1;
  std::string message;
  std::string str() const;
};

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
/// "gpipe", "1f1b", "interleaved", "zb-h1"; nullopt otherwise.
std::optional<ScheduleKind> parseScheduleKind(const std::string &name);
const char *scheduleKindName(ScheduleKind kind);

/// Parses the text form; `ranks`, `microBatches` and `stagesPerRank` are
/// taken from the text (the largest stage and micro-batch named) unless
/// given. Fails with diagnostics naming the line and the token.
struct ParseResult {
  std::optional<Schedule> schedule;
  std::vector<Diagnostic> errors;
};
ParseResult parseSchedule(const std::string &text, int64_t stagesPerRank = 1);

/// The schedule `kind` for `ranks` ranks, `microBatches` micro-batches and
/// `stagesPerRank` virtual stages (interleaved only), with the sends and
/// receives between ranks, a REDUCE_GRAD per stage after its last
/// backward, and OPTIMIZER at the end. Errors name the constraint broken
/// (1F1B with fewer micro-batches than ranks, interleaved with a count the
/// ranks do not divide).
struct GenerateResult {
  std::optional<Schedule> schedule;
  std::string error;
};
GenerateResult generateSchedule(ScheduleKind kind, int64_t ranks,
                                int64_t microBatches,
                                int64_t stagesPerRank = 1);

/// The time each compute action takes, per stage (uniform by default:
/// forward 1, backward 2 split into 1 + 1 when there is W); sends cost 0
/// and a receive waits for its send plus `latency`.
struct ActionCosts {
  double forward = 1, backward = 2, inputGrad = 1, weightGrad = 1;
  double latency = 0, reduceGrad = 0, optimizer = 0;
  /// Per-stage overrides (from the cost model): {forward, backward} times.
  std::map<int64_t, std::pair<double, double>> perStage;
};

struct SimulationResult {
  std::vector<Diagnostic> errors; // empty: the schedule is sound
  double makespan = 0;
  std::vector<double> busy;             // per rank: compute time
  std::vector<int64_t> peakActivations; // per stage
  /// When each rank's i-th action started and ended (pictures, tests).
  std::vector<std::vector<std::pair<double, double>>> timeline;
  /// Idle share of the ranks between the first action and the last:
  /// 1 - sum(busy) / (ranks * makespan).
  double bubbleFraction() const;
};
SimulationResult simulate(const Schedule &schedule,
                          const ActionCosts &costs = ActionCosts());

/// The textbook bubble fraction (p - 1) / (v m + p - 1) of GPipe and 1F1B
/// (v = 1) and interleaved 1F1B, for uniform stages.
double formulaBubbleFraction(int64_t ranks, int64_t microBatches,
                             int64_t stagesPerRank = 1);

} // namespace mlir::rtx::pipeline

#endif // RTX_ANALYSIS_PIPELINESCHEDULE_H
