//===- PlanCost.cpp - the auto-partitioner's cost model -------------------===//
//
// See PlanCost.h for what is priced and where the costs come from.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/PlanCost.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::planner;

const char *planner::recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "?";
}

const char *planner::axisOrderName(AxisOrder order) {
  static const char *names[] = {"pp,dp,tp", "dp,pp,tp", "pp,tp,dp",
                                "tp,pp,dp", "dp,tp,pp", "tp,dp,pp"};
  return names[int(order)];
}

/// Whether `policy` computes forward op `op` again in the backward pass
/// (rtx-recompute).
static bool isRecomputed(Recompute policy, const OpCost &op) {
  switch (policy) {
  case Recompute::None:
    return false;
  case Recompute::Selective:
    return op.cheapToRecompute;
  case Recompute::Full:
    return op.recomputedWhenFull;
  }
  return false;
}

/// The flat buffers rtx-shard-state makes on pipeline rank `rank` of `p`:
/// the bytes per rank of each, for tp ranks. Parameters tp splits and those
/// it replicates go into separate buffers (their shardings differ).
static std::vector<double> shardBuffers(const ModelCosts &m,
                                        const std::vector<int64_t> &stageOf,
                                        int64_t p, int64_t rank, int64_t tp) {
  // Indexed, not by name: the search prices ~10^5 plans.
  std::vector<Quantity> buffers(m.shardBufferNames.size());
  for (size_t u = 0; u < m.units.size(); ++u)
    if (stageOf[u] % p == rank)
      for (const auto &[index, bytes] : m.units[u].shardBuffers)
        buffers[index] += bytes;
  std::vector<double> sizes;
  for (const Quantity &bytes : buffers) {
    if (tp > 1 && bytes.replicated > 0 && bytes.split > 0) {
      sizes.push_back(bytes.replicated);
      sizes.push_back(bytes.split / double(tp));
    } else if (bytes.at(tp, 1) > 0) {
      sizes.push_back(bytes.at(tp, 1));
    }
  }
  return sizes;
}

/// The axes of `order` outermost first: 0 dp, 1 tp, 2 pp.
static std::array<int, 3> axesOf(AxisOrder order) {
  switch (order) {
  case AxisOrder::PpDpTp:
    return {2, 0, 1};
  case AxisOrder::DpPpTp:
    return {0, 2, 1};
  case AxisOrder::PpTpDp:
    return {2, 1, 0};
  case AxisOrder::TpPpDp:
    return {1, 2, 0};
  case AxisOrder::DpTpPp:
    return {0, 1, 2};
  case AxisOrder::TpDpPp:
    return {1, 0, 2};
  }
  return {2, 0, 1};
}

std::string planner::formatBytes(double bytes) {
  if (bytes >= double(1 << 30))
    return llvm::formatv("{0:f2} GiB", bytes / double(1 << 30));
  if (bytes >= double(1 << 20))
    return llvm::formatv("{0:f2} MiB", bytes / double(1 << 20));
  if (bytes >= 1024)
    return llvm::formatv("{0:f1} KiB", bytes / 1024.0);
  return llvm::formatv("{0:f0} B", bytes);
}

std::string Plan::str() const {
  std::string s = llvm::formatv("dp={0} tp={1}{2} pp={3}", dp, tp,
                                sequenceParallel ? "+sp" : "", pp);
  if (pp > 1)
    s += llvm::formatv(" schedule={0}", pipeline::scheduleKindName(schedule));
  if (virtualStages > 1)
    s += llvm::formatv(" v={0}", virtualStages);
  s += llvm::formatv(" zero={0} micro-batches={1}x{2} recompute={3}", zero,
                     microBatches, microBatchSize, recomputeName(recompute));
  if (dp > 1)
    s += overlap ? " overlap" : " no-overlap";
  s += llvm::formatv(" order={0}", axisOrderName(order));
  return s;
}

//===----------------------------------------------------------------------===//
// Stage splitting and closed-form pipeline times
//===----------------------------------------------------------------------===//

std::vector<int64_t> planner::splitStages(const std::vector<double> &costs,
                                          int64_t stages) {
  int64_t n = costs.size();
  // The least bottleneck X such that a greedy sweep (open a new stage when
  // the next unit would exceed X) needs at most `stages` stages; the sweep
  // is exact for contiguous min-max partitioning, so bisection on X finds
  // the optimum up to its tolerance.
  auto count = [&](double limit) {
    int64_t used = 1;
    double current = 0;
    for (double c : costs) {
      if (c > limit)
        return stages + 1;
      if (current + c > limit) {
        ++used;
        current = 0;
      }
      current += c;
    }
    return used;
  };
  double low = *std::max_element(costs.begin(), costs.end());
  double high = std::accumulate(costs.begin(), costs.end(), 0.0);
  for (int i = 0; i < 60 && high - low > 1e-12 * high; ++i) {
    double mid = 0.5 * (low + high);
    (count(mid) <= stages ? high : low) = mid;
  }
  // Cut greedily at `high`, then split the largest stages further until
  // there are exactly `stages` (more stages never raise the bottleneck).
  std::vector<int64_t> starts = {0};
  double current = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (current + costs[i] > high && current > 0) {
      starts.push_back(i);
      current = 0;
    }
    current += costs[i];
  }
  while (int64_t(starts.size()) < stages) {
    // The first stage of more than one unit gets a new cut after its first.
    std::vector<int64_t> ends(starts.begin() + 1, starts.end());
    ends.push_back(n);
    for (size_t s = 0; s < starts.size(); ++s)
      if (ends[s] - starts[s] > 1) {
        starts.insert(starts.begin() + s + 1, ends[s] - 1);
        break;
      }
  }
  return starts;
}

double planner::pipelineTimeClosedForm(pipeline::ScheduleKind kind,
                                       int64_t p, int64_t m, int64_t v,
                                       const std::vector<double> &forward,
                                       const std::vector<double> &backward,
                                       double latency) {
  // Per rank: the work of one micro-batch through all its stages.
  std::vector<double> rank(p, 0), rankForward(p, 0);
  double through = 0;
  for (size_t s = 0; s < forward.size(); ++s) {
    rank[s % p] += forward[s] + backward[s];
    rankForward[s % p] += forward[s];
    through += forward[s] + backward[s];
  }
  double slowest = *std::max_element(rank.begin(), rank.end());
  double hops = 2.0 * double(p * v - 1) * latency;
  switch (kind) {
  case pipeline::ScheduleKind::GPipe:
  case pipeline::ScheduleKind::OneFOneB:
    return double(m - 1) * slowest + through + hops;
  case pipeline::ScheduleKind::Interleaved:
    // The warm-up and drain cross every rank once per virtual stage round,
    // each step 1/v of a rank's work.
    return double(m) * slowest + double(p - 1) * slowest / double(v) + hops;
  case pipeline::ScheduleKind::ZeroBubbleH1: {
    // Weight gradients fill the drain: the bubble is (p - 1) forwards.
    double slowestForward =
        *std::max_element(rankForward.begin(), rankForward.end());
    return double(m) * slowest + double(p - 1) * slowestForward + hops;
  }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// CostModel
//===----------------------------------------------------------------------===//

CostModel::CostModel(const ModelCosts &plain, const ModelCosts *sequenceParallel,
                     const HardwareProfile &profile, CostSettings settings)
    : plain(plain), sp(sequenceParallel), profile(profile),
      settings(settings) {
  vectorRate = profile.vectorFlops > 0
                   ? profile.vectorFlops
                   : profile.peak("f32") * profile.matmulEfficiency;
  matmulPeakRate = profile.peak(plain.dtype) * profile.matmulEfficiency;
}

bool CostModel::tpDivides(int64_t tp, bool sequenceParallel) const {
  if (sequenceParallel && !sp)
    return false;
  if (tp > 1 && !plain.tensorParallel)
    return false;
  for (int64_t dim : model(sequenceParallel).splitDims)
    if (dim % tp != 0)
      return false;
  return true;
}

double CostModel::opTime(const OpCost &op, int64_t tp, double batchScale,
                         const std::string &dtype) const {
  double flops = op.flops.at(tp, batchScale);
  double bytes = op.bytes.at(tp, batchScale);
  double compute = 0;
  if (flops > 0) {
    double rate;
    if (op.contraction) {
      std::array<int64_t, 3> d;
      for (int i = 0; i < 3; ++i) {
        double x = double(op.mnk[i]) / (op.mnkSplit[i] ? double(tp) : 1.0) *
                   (op.mnkBatch[i] ? batchScale : 1.0);
        d[i] = std::max<int64_t>(1, int64_t(std::llround(x)));
      }
      rate = profile.matmul.empty()
                 ? matmulPeakRate
                 : profile.matmulRate(d[0], d[1], d[2], dtype,
                                      op.transposedLhs);
    } else {
      // Vector units: the calibrated rate of a non-GEMM kernel, else f32
      // arithmetic at the matmul efficiency of the peak.
      rate = vectorRate;
    }
    compute = flops / rate;
  }
  double memory = bytes / profile.streamBandwidth();
  return std::max(compute, memory) + profile.opOverhead;
}

double CostModel::collectiveTime(CommPattern kind, double bytes,
                                 int64_t ranks, const LinkClass &link,
                                 bool inOneNode) const {
  CollectiveParts parts = collectiveParts(kind, bytes, ranks, link, inOneNode);
  return parts.latency + parts.transfer;
}

CostModel::CollectiveParts
CostModel::collectiveParts(CommPattern kind, double bytes, int64_t ranks,
                           const LinkClass &link, bool inOneNode) const {
  if (ranks <= 1 || bytes <= 0)
    return {};
  if (inOneNode)
    if (std::optional<CollectiveFit> fit = profile.collective(kind, ranks))
      return {fit->alpha, bytes / fit->beta};
  double g = double(ranks);
  switch (kind) {
  case CommPattern::AllReduce:
    return {2 * (g - 1) * link.alpha, 2 * (g - 1) / g * bytes / link.beta};
  case CommPattern::AllGather:
  case CommPattern::ReduceScatter:
    return {(g - 1) * link.alpha, (g - 1) / g * bytes / link.beta};
  case CommPattern::SendRecv:
    return {link.alpha, bytes / link.beta};
  }
  return {};
}

std::pair<const LinkClass *, bool> CostModel::groupLink(const Plan &plan,
                                                        int axis) const {
  auto key = std::make_tuple(plan.dp, plan.tp, plan.pp, int(plan.order), axis);
  auto it = linkCache.find(key);
  if (it != linkCache.end())
    return it->second;
  return linkCache.emplace(key, findGroupLink(plan, axis)).first->second;
}

std::pair<const LinkClass *, bool>
CostModel::findGroupLink(const Plan &plan, int axis) const {
  std::array<int64_t, 3> size = {plan.dp, plan.tp, plan.pp};
  std::array<int, 3> axes = axesOf(plan.order);
  int64_t stride = 1;
  for (int i = 2; i >= 0 && axes[i] != axis; --i)
    stride *= size[axes[i]];
  int64_t n = size[axis];
  const LinkClass *worst = nullptr;
  bool oneNode = true;
  for (int64_t k = 0; k < n && n > 1; ++k) {
    int64_t a = k * stride, b = ((k + 1) % n) * stride;
    const LinkClass &link = profile.link(a, b);
    if (!worst || link.referenceTime() > worst->referenceTime())
      worst = &link;
    if (a / profile.devicesPerNode != b / profile.devicesPerNode)
      oneNode = false;
  }
  if (!worst)
    worst = &profile.linkClasses.begin()->second;
  return {worst, oneNode};
}

const std::vector<CostModel::UnitTimes> &
CostModel::unitTimes(const Plan &plan) const {
  const ModelCosts &m = model(plan.sequenceParallel);
  double batchScale = plan.microBatchSize / double(m.modelBatch);
  auto [tpLink, tpOneNode] = groupLink(plan, 1);
  auto key = std::make_tuple(plan.sequenceParallel, plan.tp, batchScale,
                             reinterpret_cast<uintptr_t>(tpLink), tpOneNode);
  auto it = unitTimeCache.find(key);
  if (it != unitTimeCache.end())
    return it->second;
  std::vector<UnitTimes> times;
  for (const UnitCost &u : m.units) {
    UnitTimes t;
    for (const OpCost &op : u.forward) {
      double time = opTime(op, plan.tp, batchScale, m.dtype);
      t.forward += time;
      if (op.cheapToRecompute)
        t.selectiveRecompute += time;
      if (op.recomputedWhenFull)
        t.fullRecompute += time;
    }
    for (const OpCost &op : u.backward)
      t.backward += opTime(op, plan.tp, batchScale, m.dtype);
    for (const CommCost &c : u.forwardComm)
      t.forwardComm += collectiveTime(c.kind, c.bytes.at(plan.tp, batchScale),
                                      plan.tp, *tpLink, tpOneNode);
    for (const CommCost &c : u.backwardComm)
      t.backwardComm += collectiveTime(c.kind,
                                       c.bytes.at(plan.tp, batchScale),
                                       plan.tp, *tpLink, tpOneNode);
    times.push_back(t);
  }
  return unitTimeCache.emplace(key, std::move(times)).first->second;
}

double CostModel::timeLowerBound(const Plan &plan) const {
  double work = 0;
  for (const UnitTimes &t : unitTimes(plan))
    work += t.forward + t.backward;
  return double(plan.microBatches) * work / double(plan.pp);
}

double CostModel::memoryLowerBound(int64_t dp, int64_t tp, int64_t pp,
                                   int64_t zero) const {
  // The most even split of the parameters over pp ranks cannot do better
  // than the total over pp; ZeRO divides what it shards by dp.
  const ModelCosts &m = plain;
  double params = 0, state = 0;
  for (const UnitCost &u : m.units) {
    params += u.paramBytes.at(tp, 1);
    state += u.stateBytes.at(tp, 1);
  }
  params /= double(pp);
  state /= double(pp);
  double p = params / (zero >= 3 ? double(dp) : 1.0);
  double g = params / (zero >= 2 ? double(dp) : 1.0);
  double s = state / (zero >= 1 ? double(dp) : 1.0);
  return p + g + s;
}

const CostModel::StageSplit &
CostModel::stageSplit(const Plan &plan) const {
  const ModelCosts &m = model(plan.sequenceParallel);
  double batchScale = plan.microBatchSize / double(m.modelBatch);
  auto [tpLink, tpOneNode] = groupLink(plan, 1);
  int64_t stages = plan.pp * plan.virtualStages;
  auto key = std::make_tuple(plan.sequenceParallel, plan.tp, batchScale,
                             reinterpret_cast<uintptr_t>(tpLink), tpOneNode,
                             int(plan.recompute), stages);
  auto it = splitCache.find(key);
  if (it != splitCache.end())
    return it->second;
  const std::vector<UnitTimes> &times = unitTimes(plan);
  StageSplit split;
  // Per unit: forward and backward time of one micro-batch, recompute in.
  std::vector<double> unitForward, unitBackward, unitTotal;
  for (const UnitTimes &t : times) {
    double extra =
        plan.recompute == Recompute::Full ? t.fullRecompute + t.forwardComm
        : plan.recompute == Recompute::Selective ? t.selectiveRecompute
                                                 : 0;
    split.recompute += extra;
    split.tensorComm += t.forwardComm + t.backwardComm;
    split.compute += t.forward + t.backward;
    unitForward.push_back(t.forward + t.forwardComm);
    unitBackward.push_back(t.backward + t.backwardComm + extra);
    unitTotal.push_back(unitForward.back() + unitBackward.back());
  }
  split.starts = splitStages(unitTotal, stages);
  split.forward.assign(stages, 0);
  split.backward.assign(stages, 0);
  split.stageOf.assign(m.units.size(), 0);
  for (int64_t s = 0; s < stages; ++s) {
    int64_t end = s + 1 < stages ? split.starts[s + 1] : m.units.size();
    for (int64_t u = split.starts[s]; u < end; ++u) {
      split.forward[s] += unitForward[u];
      split.backward[s] += unitBackward[u];
      split.stageOf[u] = s;
    }
  }
  double most = 0;
  for (int64_t s = 0; s < stages; ++s) {
    split.sum += split.forward[s] + split.backward[s];
    most = std::max(most, split.forward[s] + split.backward[s]);
  }
  split.imbalance = stages > 1 ? most / (split.sum / double(stages)) : 1.0;
  return splitCache.emplace(key, std::move(split)).first->second;
}

const CostModel::PipelineRun &
CostModel::pipelineRun(const Plan &plan, const StageSplit &split,
                       double latency) const {
  int64_t p = plan.pp, v = plan.virtualStages, mb = plan.microBatches;
  int64_t stages = p * v;
  auto key = std::make_tuple(&split, int(plan.schedule), p, v, mb, latency);
  auto it = runCache.find(key);
  if (it != runCache.end())
    return it->second;
  PipelineRun run;
  run.peakInFlight.assign(stages, 1);
  if (p == 1) {
    run.time = double(mb) * (split.forward[0] + split.backward[0]);
    return runCache.emplace(key, std::move(run)).first->second;
  }
  int64_t actions = p * v * mb * 6;
  if (actions <= settings.simulateActions) {
    pipeline::GenerateResult generated =
        pipeline::generateSchedule(plan.schedule, p, mb, v);
    if (!generated.schedule) {
      run.error = generated.error;
      return runCache.emplace(key, std::move(run)).first->second;
    }
    pipeline::ActionCosts costs;
    costs.latency = latency;
    // Zero-bubble schedules split each backward evenly into its input and
    // weight gradients.
    costs.backward = 1;
    costs.inputGrad = 0.5;
    costs.weightGrad = 0.5;
    for (int64_t s = 0; s < stages; ++s)
      costs.perStage[s] = {split.forward[s], split.backward[s]};
    pipeline::SimulationResult sim =
        pipeline::simulate(*generated.schedule, costs);
    if (!sim.errors.empty()) {
      run.error = sim.errors.front().str();
      return runCache.emplace(key, std::move(run)).first->second;
    }
    run.time = sim.makespan;
    run.bubble = sim.bubbleFraction();
    for (int64_t s = 0; s < stages; ++s)
      run.peakInFlight[s] = sim.peakActivations[s];
    return runCache.emplace(key, std::move(run)).first->second;
  }
  if ((plan.schedule == pipeline::ScheduleKind::OneFOneB ||
       plan.schedule == pipeline::ScheduleKind::ZeroBubbleH1) &&
      mb < p)
    run.error = llvm::formatv("{0} needs at least {1} micro-batches",
                              pipeline::scheduleKindName(plan.schedule), p);
  else if (plan.schedule == pipeline::ScheduleKind::Interleaved &&
           mb % p != 0)
    run.error = "interleaved needs micro-batches divisible by pp";
  if (!run.error.empty())
    return runCache.emplace(key, std::move(run)).first->second;
  run.time = pipelineTimeClosedForm(plan.schedule, p, mb, v, split.forward,
                                    split.backward, latency);
  run.bubble = 1.0 - double(mb) * split.sum / double(p) / run.time;
  for (int64_t s = 0; s < stages; ++s) {
    int64_t r = s % p;
    switch (plan.schedule) {
    case pipeline::ScheduleKind::GPipe:
      run.peakInFlight[s] = mb;
      break;
    case pipeline::ScheduleKind::Interleaved:
      // Megatron's warm-up: (p - r - 1) x 2 + (v - 1) x p + 1 chunks per
      // rank, shared by its v stages.
      run.peakInFlight[s] = std::min<int64_t>(
          mb, ((p - r - 1) * 2 + (v - 1) * p + 1 + v - 1) / v);
      break;
    default:
      run.peakInFlight[s] = std::min<int64_t>(mb, p - r);
    }
  }
  return runCache.emplace(key, std::move(run)).first->second;
}

Estimate CostModel::estimate(const Plan &plan) const {
  Estimate e;
  const ModelCosts &m = model(plan.sequenceParallel);
  int64_t p = plan.pp, v = plan.virtualStages, mb = plan.microBatches;
  int64_t stages = p * v;
  auto refuse = [&](std::string why) {
    e.feasible = false;
    e.infeasible = std::move(why);
    return e;
  };
  if (stages > int64_t(m.units.size()))
    return refuse(llvm::formatv("{0} stages but only {1} units", stages,
                                m.units.size()));
  if (plan.sequenceParallel && !sp)
    return refuse("the model has no sequence-parallel form");
  double batchScale = plan.microBatchSize / double(m.modelBatch);
  const StageSplit &split = stageSplit(plan);
  const std::vector<int64_t> &starts = split.starts;
  const std::vector<double> &stageForward = split.forward;
  const std::vector<double> &stageBackward = split.backward;
  const std::vector<int64_t> &stageOf = split.stageOf;
  e.stageStarts = starts;
  e.stageForward = stageForward;
  e.stageBackward = stageBackward;
  e.imbalance = split.imbalance;

  // Sends between stages: the tensor that leaves each stage.
  auto [ppLink, ppOneNode] = groupLink(plan, 2);
  double latency = 0;
  if (p > 1)
    for (int64_t s = 0; s + 1 < stages; ++s) {
      int64_t last = starts[s + 1] - 1;
      double bytes = m.units[last].boundaryBytes.at(plan.tp, batchScale);
      latency = std::max(latency, collectiveTime(CommPattern::SendRecv,
                                                 bytes, 2, *ppLink,
                                                 ppOneNode));
    }

  // The forward-backward part of the step.
  const PipelineRun &run = pipelineRun(plan, split, latency);
  if (!run.error.empty())
    return refuse(run.error);
  double pipelineTime = run.time;
  e.bubbleFraction = run.bubble;
  const std::vector<int64_t> &peakInFlight = run.peakInFlight;
  if (p > 1)
    e.pipelineCommTime = 2.0 * double(mb) * latency;
  e.pipelineTime = pipelineTime;

  // Per pipeline rank: parameters and state of its stages.
  std::vector<double> rankParams(p, 0), rankState(p, 0), rankSaved(p, 0),
      rankWorkspace(p, 0), rankLargestUnit(p, 0), rankForward(p, 0),
      rankBackward(p, 0);
  for (size_t u = 0; u < m.units.size(); ++u) {
    const UnitCost &unit = m.units[u];
    int64_t s = stageOf[u], r = s % p;
    double params = unit.paramBytes.at(plan.tp, 1);
    rankParams[r] += params;
    rankState[r] += unit.stateBytes.at(plan.tp, 1);
    double saved = plan.recompute == Recompute::Full
                       ? unit.boundaryBytes.at(plan.tp, batchScale)
                   : plan.recompute == Recompute::Selective
                       ? unit.savedSelectiveBytes.at(plan.tp, batchScale)
                       : unit.savedBytes.at(plan.tp, batchScale);
    rankSaved[r] += saved * double(peakInFlight[s]);
    rankWorkspace[r] = std::max(rankWorkspace[r],
                                unit.savedBytes.at(plan.tp, batchScale));
    rankLargestUnit[r] = std::max(rankLargestUnit[r], params);
  }
  for (int64_t s = 0; s < stages; ++s) {
    rankForward[s % p] += stageForward[s];
    rankBackward[s % p] += stageBackward[s];
  }

  // Data parallelism, on the rank with the most parameters, priced as the
  // programs do it (docs/planner.md, "Where the costs come from"):
  // - rtx-bucket-collectives packs the gradients into buckets of
  //   settings.bucketBytes and all-reduces each (ZeRO 0 and 1); with overlap
  //   a bucket's all-reduce runs during the backward of the layers before
  //   it, so the last bucket is always exposed (one bucket: all of it);
  // - rtx-shard-state keeps a flat buffer per layer: ZeRO-2/3 reduce-scatter
  //   and ZeRO-1/2 all-gather each buffer synchronously (rtx-schedule-overlap
  //   starts only all-reduces early);
  // - ZeRO-3 gathers each buffer before the forward and again before the
  //   backward of every micro-batch, each prefetched during the unit before
  //   (rtx-shard-state's prefetch, on by default): only the first waits.
  // What an asynchronous collective hides: on a GPU, all of it behind
  // enough compute; on a CPU host only its latency, since Gloo copies and
  // reduces with the cores that compute (one rank per core).
  auto [dpLink, dpOneNode] = groupLink(plan, 0);
  auto [tpLink, tpOneNode] = groupLink(plan, 1);
  int64_t worst = std::max_element(rankParams.begin(), rankParams.end()) -
                  rankParams.begin();
  double gradBytes = rankParams[worst];
  bool cpu = profile.deviceKind == "cpu";
  CollectiveParts bucket, gathers, firstGather;
  double buckets = 0, sharded = 0, gathersPerStep = 0;
  if (plan.dp > 1) {
    const LinkClass *link = dpLink;
    bool oneNode = dpOneNode;
    auto collective = [&](CommPattern kind, double bytes) {
      return collectiveParts(kind, bytes, plan.dp, *link, oneNode);
    };
    if (plan.zero <= 1) {
      buckets = std::max(1.0, std::ceil(gradBytes / settings.bucketBytes));
      bucket = collective(CommPattern::AllReduce, gradBytes / buckets);
    }
    for (double bytes : shardBuffers(m, stageOf, p, worst, plan.tp)) {
      if (plan.zero >= 2)
        sharded += collective(CommPattern::ReduceScatter, bytes).total();
      if (plan.zero == 1 || plan.zero == 2)
        sharded += collective(CommPattern::AllGather, bytes).total();
      if (plan.zero == 3) {
        CollectiveParts g = collective(CommPattern::AllGather, bytes);
        if (gathers.total() == 0)
          firstGather = g;
        gathers.latency += g.latency;
        gathers.transfer += g.transfer;
      }
    }
    if (plan.zero == 3)
      gathersPerStep = 2.0 * double(mb);
  }
  double reduce = buckets * bucket.total();
  e.dataCommTime = reduce + sharded + gathers.total() * gathersPerStep;
  double exposed = sharded;
  // The all-reduces: every bucket but the last can run during the backward.
  if (plan.overlap && buckets > 1) {
    double early = (buckets - 1) * bucket.total();
    double hidden = cpu ? (buckets - 1) * bucket.latency
                        : std::min(early, rankBackward[worst]);
    exposed += reduce - hidden;
  } else {
    exposed += reduce;
  }
  // ZeRO-3's gathers, per pass (forward, backward): the first waits, the
  // others were started during the unit before.
  if (gathersPerStep > 0) {
    double later = gathers.total() - firstGather.total();
    double laterLatency = gathers.latency - firstGather.latency;
    auto pass = [&](double compute) {
      return firstGather.total() +
             (cpu ? later - laterLatency : std::max(0.0, later - compute));
    };
    exposed += double(mb) *
               (pass(rankForward[worst]) + pass(rankBackward[worst]));
  }
  e.exposedDataCommTime = exposed;
  // Packing the gradients into buckets or flat buffers and the results back
  // out: two copies (read and write) of the rank's gradient bytes.
  double packing =
      plan.dp > 1 ? 4.0 * gradBytes / profile.streamBandwidth() : 0.0;

  // The optimizer step over this rank's share of the parameters.
  double share = m.paramBytes.at(plan.tp, 1) > 0
                     ? rankParams[worst] / m.paramBytes.at(plan.tp, 1)
                     : 1.0;
  double optimizer = 0;
  for (const OpCost &op : m.optimizer)
    optimizer += opTime(op, plan.tp, 1, m.dtype);
  optimizer *= share / (plan.zero >= 1 ? double(plan.dp) : 1.0);
  for (const CommCost &c : m.optimizerComm)
    optimizer += collectiveTime(c.kind, c.bytes.at(plan.tp, 1), plan.tp,
                                *tpLink, tpOneNode);
  e.optimizerTime = optimizer;

  e.stepTime = pipelineTime + exposed + optimizer + packing;
  e.computeTime =
      double(mb) * (split.compute + split.recompute) / double(p) + packing;
  e.recomputeTime = double(mb) * split.recompute / double(p);
  e.tensorCommTime = double(mb) * split.tensorComm / double(p);

  // Memory of the worst rank.
  double limit = memoryLimit();
  int64_t dp = plan.dp;
  for (int64_t r = 0; r < p; ++r) {
    std::array<double, kMemoryKinds> mem{};
    mem[int(MemoryKind::Parameters)] =
        rankParams[r] / (plan.zero >= 3 ? double(dp) : 1.0);
    mem[int(MemoryKind::Gradients)] =
        rankParams[r] / (plan.zero >= 2 ? double(dp) : 1.0);
    mem[int(MemoryKind::OptimizerState)] =
        rankState[r] / (plan.zero >= 1 ? double(dp) : 1.0);
    mem[int(MemoryKind::Activations)] = rankSaved[r];
    mem[int(MemoryKind::Communication)] =
        plan.zero == 3 ? 2.0 * rankLargestUnit[r]
        : dp > 1       ? std::min(rankParams[r], settings.bucketBytes)
                       : 0.0;
    mem[int(MemoryKind::Temporaries)] = rankWorkspace[r];
    double peak = 0;
    for (double x : mem)
      peak += x;
    if (peak > e.peakMemory) {
      e.peakMemory = peak;
      e.memory = mem;
    }
  }

  // Bytes per rank per step by link class.
  auto add = [&](const LinkClass *link, double bytes) {
    if (bytes > 0)
      e.commBytes[link->name] += bytes;
  };
  if (plan.tp > 1) {
    double bytes = 0;
    for (const UnitCost &u : m.units) {
      for (const CommCost &c : u.forwardComm)
        bytes += c.bytes.at(plan.tp, batchScale);
      for (const CommCost &c : u.backwardComm)
        bytes += c.bytes.at(plan.tp, batchScale);
    }
    add(tpLink, bytes * double(mb) / double(p));
  }
  if (p > 1)
    add(ppLink, 2.0 * double(mb) *
                    (latency > 0 ? m.units[starts[1] - 1].boundaryBytes.at(
                                       plan.tp, batchScale)
                                 : 0));
  if (dp > 1)
    add(dpLink, gradBytes * (plan.zero <= 1 ? 1.0 : 2.0) +
                    (plan.zero == 1 ? gradBytes : 0.0) +
                    (plan.zero == 3 ? gradBytes * gathersPerStep : 0.0));

  // Throughput.
  double sequences = double(settings.globalBatch);
  e.tokensPerSecond = sequences * double(m.sequenceLength) / e.stepTime;
  double perModelBatch = sequences / double(m.modelBatch);
  double devices = double(plan.devices());
  e.modelFlopsPerDevice =
      m.trainingFlops * perModelBatch / e.stepTime / devices;
  double recomputeFlops = 0;
  for (const UnitCost &u : m.units)
    for (const OpCost &op : u.forward)
      if (isRecomputed(plan.recompute, op))
        recomputeFlops += op.flops.at(1, 1);
  e.hardwareFlopsPerDevice = (m.trainingFlops + recomputeFlops) *
                             perModelBatch / e.stepTime / devices;

  if (e.peakMemory > limit)
    return refuse(llvm::formatv("needs {0:f2} GiB per rank, over the limit "
                                "of {1:f2} GiB",
                                e.peakMemory / double(1 << 30),
                                limit / double(1 << 30)));
  return e;
}
