//===- PlanCost.h - the auto-partitioner's cost model ----------*- C++ -*-===//
//
// The step time and memory of a candidate plan (dp, tp, pp, sequence
// parallelism, ZeRO stage, micro-batches, virtual stages, schedule,
// recompute, overlap, and the order of the mesh axes over the devices), on
// a hardware profile, from the costs of the real program.
//
// Where the costs come from. rtx-auto-partition compiles the model with the
// real passes a few times, cut into units at its layer boundaries (the
// places rtx-split-stages may cut): once on one device, once with tp=2
// (and once more with sequence parallelism), once with dp=2. Each op of the
// training step keeps its unit, its phase (forward, backward, optimizer)
// and CostOpInterface's exact FLOPs, bytes and GEMM shape. Matching the
// programs op by op says, for every quantity, whether tp splits it and
// whether it grows with the per-rank micro-batch: that is all a plan
// changes for a transformer-like program, so any plan's per-rank program is
// priced without compiling it. The tp=2 program also gives the collectives
// tensor parallelism inserts (kind and bytes) per unit.
//
// How time is priced:
// - an op: the roofline max(FLOPs / rate, bytes / bandwidth) plus the
//   profile's fixed cost per op, the rate of a GEMM looked up by its shape
//   (calibrated) or peak x matmul_efficiency;
// - a collective on a group: rtx-calibrate's fit for that group size when
//   the profile has one and the group lies in one node; otherwise a ring
//   over the slowest link class between the group's members (the mesh axis
//   order decides which devices those are), alpha-beta per step;
// - the pipeline: part 4's simulator on the generated schedule with the
//   per-stage forward and backward times (closed forms for uniform stages
//   when the schedule is too long to simulate quickly);
// - data parallelism: bucketed all-reduces (ZeRO 0/1), per-unit
//   reduce-scatters (ZeRO-2/3) and all-gathers (ZeRO-1/2; ZeRO-3 per
//   micro-batch, forward and backward), priced as the programs run them
//   (estimate() says which hide, and when);
// - recompute: full runs each unit's forward again in its backward,
//   selective the cheap ops (isCheapToRecompute).
// Memory per rank follows rtx-plan-memory's kinds: parameters, gradients
// and optimizer state divided by ZeRO, activations kept per micro-batch
// times the micro-batches in flight (from the schedule), communication
// buffers and a unit's working set.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_ANALYSIS_PLANCOST_H
#define RTX_ANALYSIS_PLANCOST_H

#include "rtx/Analysis/HardwareProfile.h"
#include "rtx/Analysis/MemoryPlan.h"
#include "rtx/Analysis/PipelineSchedule.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::rtx::planner {

/// A quantity of the probed program at tp=1 and the model's micro-batch,
/// split into the part tp divides and the part it replicates; `batch` says
/// whether it grows with the per-rank micro-batch.
struct Quantity {
  double replicated = 0;
  double split = 0;
  bool batch = false;
  double at(int64_t tp, double batchScale) const {
    return (replicated + split / double(tp)) * (batch ? batchScale : 1.0);
  }
  Quantity &operator+=(const Quantity &o) {
    replicated += o.replicated;
    split += o.split;
    return *this;
  }
};

enum class Phase { Forward, Backward, Optimizer };

/// One op of the training step.
struct OpCost {
  std::string name; // "rtx.linear"
  Quantity flops, bytes;
  /// A GEMM's {M, N, K} at tp=1 (empty otherwise), with which dimensions tp
  /// splits and which grow with the micro-batch.
  std::array<int64_t, 3> mnk{};
  std::array<bool, 3> mnkSplit{}, mnkBatch{};
  bool contraction = false;
  bool transposedLhs = false; // a weight gradient's layout, X^T dY
  bool cheapToRecompute = false;
  bool recomputedWhenFull = false; // see ProbeOp
};

/// A collective tensor parallelism inserts: bytes of the whole tensor.
struct CommCost {
  CommPattern kind = CommPattern::AllReduce;
  Quantity bytes;
};

/// A unit: the ops between two layer boundaries, forward and backward.
struct UnitCost {
  std::vector<OpCost> forward, backward;
  std::vector<CommCost> forwardComm, backwardComm;
  Quantity paramBytes, stateBytes;
  /// paramBytes by the flat buffer of rtx-shard-state (unit=block) each
  /// parameter joins, as (index into ModelCosts::shardBufferNames, bytes):
  /// ZeRO moves each buffer of a pipeline rank with one collective, and a
  /// buffer can span units (a layer's attention and MLP, the embedding and
  /// the head).
  std::vector<std::pair<int64_t, Quantity>> shardBuffers;
  /// Forward values the backward reads, per micro-batch: all of them, and
  /// those that selective recompute keeps.
  Quantity savedBytes, savedSelectiveBytes;
  /// The tensor that leaves the unit (a pipeline stage's send).
  Quantity boundaryBytes;
  std::string location; // of its first op, for reports
};

/// The probed model, for one setting of sequence parallelism.
struct ModelCosts {
  std::vector<UnitCost> units;
  std::vector<OpCost> optimizer;
  std::vector<CommCost> optimizerComm;
  Quantity paramBytes; // all units
  /// rtx-shard-state's flat buffers ("transformer.h.3", "root").
  std::vector<std::string> shardBufferNames;
  /// Sequences per micro-batch the model is written for, and tokens each.
  int64_t modelBatch = 1;
  int64_t sequenceLength = 1;
  std::string dtype = "f32";
  /// FLOPs of forward plus backward of one model micro-batch (tp=1).
  double trainingFlops = 0;
  double forwardFlops = 0;
  /// Dimensions tp splits: a tp degree must divide each of them.
  std::vector<int64_t> splitDims;
  /// Dimensions that grow with the micro-batch and that dp splits: the
  /// model batch dimension (dp must divide the batch when it is fixed).
  bool sequenceParallel = false;
  /// Whether a dp=2 probe said what grows with the micro-batch.
  bool batchProbed = true;
  /// False when the model does not compile with tp=2.
  bool tensorParallel = true;
  /// Parameters (elements) of the model.
  int64_t parameters = 0;
};

enum class Recompute { None, Selective, Full };
const char *recomputeName(Recompute r);

/// The order of the mesh axes over the devices, outermost first; the last
/// axis' ranks are neighbours (inside a node).
enum class AxisOrder { PpDpTp, DpPpTp, PpTpDp, TpPpDp, DpTpPp, TpDpPp };
constexpr int kAxisOrders = 6;
/// "pp,dp,tp" and so on.
const char *axisOrderName(AxisOrder order);

struct Plan {
  int64_t dp = 1, tp = 1, pp = 1;
  bool sequenceParallel = false;
  int64_t zero = 0;
  int64_t microBatches = 1;     // per step, per pipeline (accumulation)
  double microBatchSize = 1;    // sequences per rank per micro-batch
  int64_t virtualStages = 1;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  Recompute recompute = Recompute::None;
  bool overlap = false;
  AxisOrder order = AxisOrder::PpDpTp;
  int64_t devices() const { return dp * tp * pp; }
  /// "dp=2 tp=4 pp=1 zero=1 mb=4x2 recompute=none ...", for reports.
  std::string str() const;
};

struct Estimate {
  bool feasible = true;
  std::string infeasible; // why not, when not
  double stepTime = 0;
  // Time split (per step, on the slowest rank).
  double computeTime = 0;  // ops, recompute included
  double recomputeTime = 0;
  double tensorCommTime = 0;   // tp collectives
  double pipelineCommTime = 0; // sends between stages (per micro-batch sum)
  double dataCommTime = 0;     // dp / ZeRO collectives, total
  double exposedDataCommTime = 0;
  double optimizerTime = 0;
  double bubbleFraction = 0;
  double pipelineTime = 0; // the forward-backward part
  /// Per rank, the worst rank's memory by kind and its peak.
  std::array<double, kMemoryKinds> memory{};
  double peakMemory = 0;
  /// Bytes each rank moves per step, by link class.
  std::map<std::string, double> commBytes;
  double commTime() const {
    return tensorCommTime + pipelineCommTime + dataCommTime;
  }
  /// Stage balance: slowest stage over the mean.
  double imbalance = 1;
  std::vector<int64_t> stageStarts; // first unit of each stage
  /// Per stage, one micro-batch: forward and backward (recompute in).
  std::vector<double> stageForward, stageBackward;
  double tokensPerSecond = 0;
  /// FLOP/s per device: of the model (forward + backward) and of what runs
  /// (recompute included, Megatron's "achieved" figure).
  double modelFlopsPerDevice = 0;
  double hardwareFlopsPerDevice = 0;
};

/// Settings that are not part of the plan.
struct CostSettings {
  int64_t globalBatch = 1; // sequences per step
  double memoryMargin = 0.1;
  /// The gradient bucket of the programs (rtx-distribute's bucket-bytes).
  double bucketBytes = 26214400;
  /// Simulate schedules with at most this many actions; longer ones use
  /// the closed forms.
  int64_t simulateActions = 4096;
};

/// Prices plans of one probed model on one profile, caching what several
/// plans share (unit times by tp and micro-batch, stage splits).
class CostModel {
public:
  CostModel(const ModelCosts &plain, const ModelCosts *sequenceParallel,
            const HardwareProfile &profile, CostSettings settings);

  Estimate estimate(const Plan &plan) const;

  /// Whether tp divides every dimension the model splits over tp (and the
  /// sequence with sequence parallelism).
  bool tpDivides(int64_t tp, bool sequenceParallel) const;
  const ModelCosts &model(bool sequenceParallel) const {
    return sequenceParallel && sp ? *sp : plain;
  }
  const HardwareProfile &hardware() const { return profile; }
  const CostSettings &costSettings() const { return settings; }
  int64_t units() const { return plain.units.size(); }
  /// A lower bound of the per-rank memory of any plan with these degrees
  /// (parameters, gradients and state, no activations): for pruning.
  double memoryLowerBound(int64_t dp, int64_t tp, int64_t pp,
                          int64_t zero) const;
  /// A lower bound of `plan`'s step time: its micro-batches' compute over
  /// pp (the slowest rank does at least the mean): for pruning.
  double timeLowerBound(const Plan &plan) const;
  double memoryLimit() const {
    return double(profile.memoryBytes) * (1.0 - settings.memoryMargin);
  }

  /// The time of one collective of `bytes` (whole tensor) over `ranks`
  /// ranks joined by `link`.
  double collectiveTime(CommPattern kind, double bytes, int64_t ranks,
                        const LinkClass &link, bool inOneNode) const;
  /// A collective's time as its latency (alpha terms: waiting, which an
  /// asynchronous collective hides on any device) and its transfer (bytes /
  /// beta terms: copying and reducing).
  struct CollectiveParts {
    double latency = 0, transfer = 0;
    double total() const { return latency + transfer; }
  };
  CollectiveParts collectiveParts(CommPattern kind, double bytes,
                                  int64_t ranks, const LinkClass &link,
                                  bool inOneNode) const;
  /// The slowest link class among the ranks of one group of `axis` (0 dp,
  /// 1 tp, 2 pp) under `plan`'s axis order, and whether it lies in a node.
  std::pair<const LinkClass *, bool> groupLink(const Plan &plan,
                                               int axis) const;

private:
  struct UnitTimes {
    double forward = 0, backward = 0, forwardComm = 0, backwardComm = 0;
    double selectiveRecompute = 0, fullRecompute = 0;
  };
  const std::vector<UnitTimes> &unitTimes(const Plan &plan) const;
  std::pair<const LinkClass *, bool> findGroupLink(const Plan &plan,
                                                   int axis) const;
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int, int>,
                   std::pair<const LinkClass *, bool>>
      linkCache;
  /// The units of a plan split into stages, with per-stage times.
  struct StageSplit {
    std::vector<int64_t> starts, stageOf;
    std::vector<double> forward, backward;
    double sum = 0, imbalance = 1;
    double compute = 0, recompute = 0, tensorComm = 0; // per micro-batch
  };
  const StageSplit &stageSplit(const Plan &plan) const;
  /// The forward-backward part of a step: simulated or closed form.
  struct PipelineRun {
    double time = 0, bubble = 0;
    std::vector<int64_t> peakInFlight;
    std::string error;
  };
  const PipelineRun &pipelineRun(const Plan &plan, const StageSplit &split,
                                 double latency) const;
  double opTime(const OpCost &op, int64_t tp, double batchScale,
                const std::string &dtype) const;

  const ModelCosts &plain;
  const ModelCosts *sp;
  const HardwareProfile &profile;
  CostSettings settings;
  /// Rates looked up once: vector f32, and GEMMs in the model's type when
  /// the profile has no calibrated shapes.
  double vectorRate = 0, matmulPeakRate = 0;
  mutable std::map<std::tuple<bool, int64_t, double, uintptr_t, bool>,
                   std::vector<UnitTimes>>
      unitTimeCache;
  mutable std::map<
      std::tuple<bool, int64_t, double, uintptr_t, bool, int, int64_t>,
      StageSplit>
      splitCache;
  mutable std::map<std::tuple<const StageSplit *, int, int64_t, int64_t,
                              int64_t, double>,
                   PipelineRun>
      runCache;
};

/// "1.25 GiB", "3.00 MiB", "12.0 KiB", "512 B": for reports and errors.
std::string formatBytes(double bytes);

/// Splits `costs` (one per unit, in order) into `stages` contiguous,
/// non-empty stages minimising the most expensive one; returns each stage's
/// first unit. `stages` must not exceed costs.size().
std::vector<int64_t> splitStages(const std::vector<double> &costs,
                                 int64_t stages);

/// The forward-backward time of a pipeline with `ranks` ranks and
/// per-stage times, without simulating: (m - 1) x slowest rank + one pass
/// through all stages for GPipe and 1F1B, the interleaved form for v > 1,
/// and ZB-H1's bubble of (p - 1) x (forward) instead of (p - 1) x (forward
/// + backward). For uniform stages it equals the simulator's makespan (a
/// unit test checks both).
double pipelineTimeClosedForm(pipeline::ScheduleKind kind, int64_t ranks,
                              int64_t microBatches, int64_t virtualStages,
                              const std::vector<double> &forward,
                              const std::vector<double> &backward,
                              double latency);

} // namespace mlir::rtx::planner

#endif // RTX_ANALYSIS_PLANCOST_H
