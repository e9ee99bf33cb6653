//===- AutoPartition.cpp - the rtx-auto-partition pass --------------------===//
//
// Probes the model with the real passes, prices every plan of the search
// space with the cost model (rtx/Analysis/PlanCost.h), and writes the
// choice into the IR and a report. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "LayerBoundaries.h"

#include "rtx/Analysis/HardwareProfile.h"
#include "rtx/Analysis/PlanSearch.h"
#include "rtx/Analysis/ProbeCosts.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXAUTOPARTITION
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::planner;
namespace json = llvm::json;

namespace {

/// The unit of each forward computing op: the layer boundaries before it.
std::vector<int64_t> unitsOf(ArrayRef<Operation *> computing,
                             int64_t &unitCount) {
  std::vector<LayerBoundary> boundaries = findLayerBoundaries(computing);
  std::vector<int64_t> unit(computing.size(), 0);
  size_t next = 0;
  int64_t current = 0;
  for (size_t i = 0; i < computing.size(); ++i) {
    while (next < boundaries.size() &&
           boundaries[next].position <= int64_t(i)) {
      ++current;
      ++next;
    }
    unit[i] = current;
  }
  unitCount = int64_t(boundaries.size()) + 1;
  return unit;
}

func::FuncOp stepFunction(ModuleOp module) {
  func::FuncOp found;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal()) {
      if (found)
        return nullptr;
      found = f;
    }
  return found;
}

std::string humanTime(double seconds) {
  if (seconds >= 1)
    return llvm::formatv("{0:f3} s", seconds);
  if (seconds >= 1e-3)
    return llvm::formatv("{0:f3} ms", seconds * 1e3);
  return llvm::formatv("{0:f1} us", seconds * 1e6);
}

struct RTXAutoPartitionPass
    : mlir::rtx::impl::RTXAutoPartitionBase<RTXAutoPartitionPass> {
  using RTXAutoPartitionBase::RTXAutoPartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const llvm::Twine &message) {
      module.emitError() << "rtx-auto-partition: " << message;
      signalPassFailure();
    };
    // Options.
    if (profile.empty())
      return fail("profile= is required: a built-in profile (" +
                  llvm::join(builtinProfileNames(), ", ") +
                  ") or a file written by rtx-topology / rtx-calibrate");
    if (devices < 1)
      return fail("devices=" + llvm::Twine(int64_t(devices)) +
                  " must be at least 1");
    std::optional<Objective> chosen = parseObjective(objective);
    if (!chosen) {
      std::string names;
      for (Objective o : kObjectives)
        names += std::string(names.empty() ? "" : ", ") + objectiveName(o);
      return fail("objective='" + objective + "' is not one of " + names);
    }
    if (!(memoryMargin >= 0 && memoryMargin < 1))
      return fail(llvm::formatv("memory-margin={0} must be in [0, 1)",
                                double(memoryMargin))
                      .str());
    if (!(balanceThreshold >= 1))
      return fail(llvm::formatv("balance-threshold={0} must be at least 1 "
                                "(the slowest stage over the mean)",
                                double(balanceThreshold))
                      .str());
    SmallVector<StringRef> weightTexts;
    StringRef(weights).split(weightTexts, ',');
    SmallVector<double, 3> weightValues;
    for (StringRef w : weightTexts) {
      double value;
      if (w.trim().getAsDouble(value) || value < 0)
        return fail("weights='" + weights +
                    "': expected three numbers >= 0 (memory, compute, "
                    "communication)");
      weightValues.push_back(value);
    }
    if (weightValues.size() != 3)
      return fail("weights='" + weights +
                  "': expected three numbers (memory, compute, "
                  "communication)");
    for (auto [name, value] : {std::pair<const char *, int64_t>{"dp", dp},
                               {"tp", tp},
                               {"pp", pp}})
      if (value < 0 || (value > 0 && devices % value != 0))
        return fail(llvm::formatv("{0}={1} does not divide devices={2}", name,
                                  value, int64_t(devices))
                        .str());
    llvm::Expected<HardwareProfile> hardware = loadHardwareProfile(profile);
    if (!hardware)
      return fail(llvm::toString(hardware.takeError()));
    func::FuncOp function = stepFunction(module);
    if (!function)
      return fail("expected one function with a body (the forward model)");
    if (!module.getOps<MeshOp>().empty())
      return fail("runs on a forward model before rtx-distribute; this "
                  "module already has a mesh");

    // The probes.
    auto started = std::chrono::steady_clock::now();
    SmallVector<Operation *> computing = forwardComputingOps(function);
    if (computing.empty())
      return fail("the model computes nothing");
    int64_t units = 0;
    std::vector<int64_t> unitOf = unitsOf(computing, units);
    std::string probeError;
    auto probe = [&](StringRef mesh, bool vocab, bool sp,
                     StringRef axis) -> std::optional<ProbeProgram> {
      OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
      func::FuncOp f = stepFunction(*copy);
      SmallVector<Operation *> ops = forwardComputingOps(f);
      Builder b(&getContext());
      for (auto [i, op] : llvm::enumerate(ops))
        op->setAttr(RTXDialect::getStageAttrName(),
                    b.getI64IntegerAttr(unitOf[i]));
      PassManager pm(&getContext(), ModuleOp::getOperationName());
      if (!mesh.empty()) {
        RTXAddMeshOptions meshOptions;
        meshOptions.mesh = mesh.str();
        pm.addPass(createRTXAddMesh(meshOptions));
        if (vocab)
          pm.addPass(createRTXPadVocabulary());
      }
      pm.nest<func::FuncOp>().addPass(createRTXAutodiff());
      RTXOptimizerOptions optimizerOptions;
      optimizerOptions.kind = optimizer;
      optimizerOptions.mixedPrecision = mixedPrecision;
      pm.addPass(createRTXOptimizer(optimizerOptions));
      if (!mesh.empty()) {
        RTXSeedShardingsOptions seed;
        seed.vocabParallel = vocab;
        seed.sequenceParallel = sp;
        pm.addPass(createRTXSeedShardings(seed));
        pm.addPass(createRTXPropagateSharding());
        pm.addPass(createRTXPartition());
      }
      std::string errors;
      {
        ScopedDiagnosticHandler handler(&getContext(), [&](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error)
            errors += (errors.empty() ? "" : "; ") + d.str();
          return success();
        });
        if (failed(pm.run(*copy))) {
          probeError = llvm::formatv("mesh {0}{1}: {2}", mesh,
                                     sp ? " with sequence parallelism" : "",
                                     errors)
                           .str();
          return std::nullopt;
        }
      }
      return readProbe(stepFunction(*copy), units, axis);
    };
    std::optional<ProbeProgram> one = probe("", false, false, "");
    if (!one)
      return fail("the model does not compile on one device: " + probeError);
    bool vocab = true;
    std::optional<ProbeProgram> tp2 = probe("tp:2", true, false, "tp");
    if (!tp2) {
      vocab = false;
      tp2 = probe("tp:2", false, false, "tp");
    }
    std::string tpError = tp2 ? "" : probeError;
    std::optional<ProbeProgram> tp2sp =
        tp2 ? probe("tp:2", vocab, true, "tp") : std::nullopt;
    std::optional<ProbeProgram> dp2 = probe("dp:2", false, false, "dp");
    double probeSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - started)
                              .count();

    ModelCosts plain = combineProbes(*one, tp2 ? *tp2 : *one,
                                     dp2 ? &*dp2 : nullptr, false);
    if (!tp2)
      plain.tensorParallel = false;
    std::optional<ModelCosts> spCosts;
    if (tp2sp)
      spCosts =
          combineProbes(*one, *tp2sp, dp2 ? &*dp2 : nullptr, true);

    // The search.
    CostSettings settings;
    settings.globalBatch = globalBatch > 0 ? globalBatch : plain.modelBatch;
    settings.memoryMargin = memoryMargin;
    settings.bucketBytes = double(kDefaultGradientBucketBytes);
    if (!varyMicroBatch && settings.globalBatch % plain.modelBatch != 0)
      return fail(llvm::formatv(
                      "global-batch={0} is not a multiple of the model's "
                      "batch of {1} sequences: each step takes whole "
                      "micro-batches of the model (or pass "
                      "vary-micro-batch=true for a report)",
                      settings.globalBatch, plain.modelBatch)
                      .str());
    CostModel model(plain, spCosts ? &*spCosts : nullptr,
                    *hardware, settings);
    SearchOptions search;
    search.devices = devices;
    search.objective = *chosen;
    search.balanceThreshold = balanceThreshold;
    search.weightMemory = weightValues[0];
    search.weightCompute = weightValues[1];
    search.weightCommunication = weightValues[2];
    search.varyMicroBatch = varyMicroBatch;
    search.dp = dp;
    search.tp = tp;
    search.pp = pp;
    search.keep = std::max<int64_t>(1, keep);
    search.exhaustive = exhaustive;
    search.zero = zero;
    search.microBatchSize = microBatchSize;
    search.virtualStages = virtualStages;
    if (zero < -1 || zero > 3)
      return fail(llvm::formatv("zero={0} must be 0 to 3 (or -1: searched)",
                                int64_t(zero))
                      .str());
    if (sequenceParallel == "true" || sequenceParallel == "false")
      search.sequenceParallel = sequenceParallel == "true";
    else if (sequenceParallel != "any")
      return fail("sequence-parallel='" + sequenceParallel +
                  "' is not true, false or any");
    if (recompute == "none")
      search.recompute = Recompute::None;
    else if (recompute == "selective")
      search.recompute = Recompute::Selective;
    else if (recompute == "full")
      search.recompute = Recompute::Full;
    else if (recompute != "any")
      return fail("recompute='" + recompute +
                  "' is not none, selective, full or any");
    if (schedule != "any") {
      search.schedule = pipeline::parseScheduleKind(schedule);
      if (!search.schedule)
        return fail("schedule='" + schedule +
                    "' is not gpipe, 1f1b, interleaved, zb-h1 or any");
    }
    SearchResult result = searchPlans(model, search);
    if (result.best.empty()) {
      std::string why = result.error;
      if (!tpError.empty())
        why += " (tensor parallelism is unavailable: " + tpError + ")";
      return fail(why);
    }

    const Candidate &best = result.best.front();
    bool applicable =
        std::abs(best.plan.microBatchSize * double(best.plan.dp) -
                 double(plain.modelBatch)) < 1e-9;
    std::string distribute = distributeOptions(best.plan, vocab);
    writePlan(module, function, computing, unitOf, best, applicable,
              distribute);
    json::Object report =
        makeReport(*hardware, plain, result, search, settings, vocab,
                   probeSeconds, applicable, units);
    std::string text = textReport(*hardware, plain, result, search, settings,
                                  applicable, probeSeconds);
    report["text"] = text;
    if (!reportFile.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(reportFile, ec, llvm::sys::fs::OF_Text);
      if (ec)
        return fail("cannot write report-file '" + reportFile +
                    "': " + ec.message());
      os << llvm::formatv("{0:2}", json::Value(json::Object(report))) << "\n";
    }
    // At the function's location: a remark on the module would print the
    // whole module after it.
    if (remarks)
      mlir::emitRemark(function.getLoc()) << text;
  }

  /// The rtx-distribute options that realise `plan`.
  static std::string distributeOptions(const Plan &plan, bool vocab) {
    std::array<std::pair<const char *, int64_t>, 3> sizes = {
        std::pair<const char *, int64_t>{"dp", plan.dp},
        {"tp", plan.tp},
        {"pp", plan.pp}};
    std::string order = axisOrderName(plan.order);
    SmallVector<StringRef> names;
    StringRef(order).split(names, ',');
    std::string mesh;
    for (StringRef name : names)
      for (auto [axis, size] : sizes)
        if (name == axis && size > 1)
          mesh += llvm::formatv("{0}{1}:{2}", mesh.empty() ? "" : ",", axis,
                                size);
    std::string s = "mesh=" + (mesh.empty() ? std::string("dp:1") : mesh);
    if (plan.tp > 1 && vocab)
      s += " vocab-parallel=true";
    if (plan.sequenceParallel)
      s += " sequence-parallel=true";
    if (plan.pp > 1) {
      s += llvm::formatv(" pipeline-schedule={0} pipeline-micro-batches={1}",
                         pipeline::scheduleKindName(plan.schedule),
                         plan.microBatches);
      if (plan.virtualStages > 1)
        s += llvm::formatv(" virtual-stages={0}", plan.virtualStages);
    } else if (plan.microBatches > 1) {
      s += llvm::formatv(" micro-batches={0}", plan.microBatches);
    }
    if (plan.zero > 0)
      s += llvm::formatv(" shard-state={0}", plan.zero);
    if (plan.recompute != Recompute::None)
      s += std::string(" recompute=") + recomputeName(plan.recompute);
    if (plan.overlap)
      s += " overlap=true";
    return s;
  }

  static void writePlan(ModuleOp module, func::FuncOp function,
                        ArrayRef<Operation *> computing,
                        const std::vector<int64_t> &unitOf,
                        const Candidate &best, bool applicable,
                        const std::string &distribute) {
    Builder b(module.getContext());
    const Plan &p = best.plan;
    const Estimate &e = best.estimate;
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("dp", b.getI64IntegerAttr(p.dp)),
        b.getNamedAttr("tp", b.getI64IntegerAttr(p.tp)),
        b.getNamedAttr("pp", b.getI64IntegerAttr(p.pp)),
        b.getNamedAttr("sequence_parallel", b.getBoolAttr(p.sequenceParallel)),
        b.getNamedAttr("zero", b.getI64IntegerAttr(p.zero)),
        b.getNamedAttr("micro_batches", b.getI64IntegerAttr(p.microBatches)),
        b.getNamedAttr("micro_batch_size", b.getF64FloatAttr(p.microBatchSize)),
        b.getNamedAttr("virtual_stages", b.getI64IntegerAttr(p.virtualStages)),
        b.getNamedAttr("schedule", b.getStringAttr(pipeline::scheduleKindName(
                                       p.schedule))),
        b.getNamedAttr("recompute", b.getStringAttr(recomputeName(p.recompute))),
        b.getNamedAttr("overlap", b.getBoolAttr(p.overlap)),
        b.getNamedAttr("order", b.getStringAttr(axisOrderName(p.order))),
        b.getNamedAttr("predicted_step_s", b.getF64FloatAttr(e.stepTime)),
        b.getNamedAttr("predicted_peak_bytes",
                       b.getI64IntegerAttr(int64_t(e.peakMemory))),
        b.getNamedAttr("applicable", b.getBoolAttr(applicable)),
        b.getNamedAttr("distribute", b.getStringAttr(distribute)),
    };
    module->setAttr(RTXDialect::getPlanAttrName(), b.getDictionaryAttr(fields));
    // Pipeline stages: each forward op gets the stage of its unit; stages
    // from the plan's split replace any the model had.
    function.walk([](Operation *op) {
      op->removeAttr(RTXDialect::getStageAttrName());
    });
    if (p.pp == 1 || !applicable)
      return;
    const std::vector<int64_t> &starts = e.stageStarts;
    for (auto [i, op] : llvm::enumerate(computing)) {
      int64_t unit = unitOf[i];
      int64_t stage =
          std::upper_bound(starts.begin(), starts.end(), unit) -
          starts.begin() - 1;
      op->setAttr(RTXDialect::getStageAttrName(), b.getI64IntegerAttr(stage));
    }
  }

  static json::Object planJSON(const Candidate &c, bool vocab) {
    const Plan &p = c.plan;
    const Estimate &e = c.estimate;
    json::Object memory;
    for (int64_t k = 0; k < kMemoryKinds; ++k)
      memory[memoryKindName(MemoryKind(k))] = int64_t(e.memory[k]);
    memory["peak"] = int64_t(e.peakMemory);
    json::Object links;
    for (auto &[name, bytes] : e.commBytes)
      links[name] = int64_t(bytes);
    json::Array starts, stages;
    for (int64_t s : e.stageStarts)
      starts.push_back(s);
    for (size_t s = 0; s < e.stageForward.size(); ++s)
      stages.push_back(json::Object{{"forward_s", e.stageForward[s]},
                                    {"backward_s", e.stageBackward[s]}});
    return json::Object{
        {"dp", p.dp},
        {"tp", p.tp},
        {"pp", p.pp},
        {"sequence_parallel", p.sequenceParallel},
        {"zero", p.zero},
        {"micro_batches", p.microBatches},
        {"micro_batch_size", p.microBatchSize},
        {"virtual_stages", p.virtualStages},
        {"schedule", pipeline::scheduleKindName(p.schedule)},
        {"recompute", recomputeName(p.recompute)},
        {"overlap", p.overlap},
        {"order", axisOrderName(p.order)},
        {"distribute", distributeOptions(p, vocab)},
        {"objective_value", json::Array{c.primary, c.secondary}},
        {"predicted",
         json::Object{
             {"step_time_s", e.stepTime},
             {"tokens_per_s", e.tokensPerSecond},
             {"model_flops_per_device", e.modelFlopsPerDevice},
             {"hardware_flops_per_device", e.hardwareFlopsPerDevice},
             {"bubble_fraction", e.bubbleFraction},
             {"stage_imbalance", e.imbalance},
             {"stage_first_units", std::move(starts)},
             {"stages", std::move(stages)},
             {"time_s",
              json::Object{{"compute", e.computeTime - e.recomputeTime},
                           {"recompute", e.recomputeTime},
                           {"tensor_parallel_comm", e.tensorCommTime},
                           {"pipeline_sends", e.pipelineCommTime},
                           {"data_parallel_comm", e.dataCommTime},
                           {"data_parallel_comm_exposed",
                            e.exposedDataCommTime},
                           {"optimizer", e.optimizerTime},
                           {"pipeline", e.pipelineTime}}},
             {"memory_bytes", std::move(memory)},
             {"comm_bytes_per_link_class", std::move(links)}}}};
  }

  json::Object makeReport(const HardwareProfile &hw, const ModelCosts &m,
                          const SearchResult &r, const SearchOptions &search,
                          const CostSettings &settings, bool vocab,
                          double probeSeconds, bool applicable,
                          int64_t units) {
    json::Array runners;
    for (size_t i = 1; i < r.best.size(); ++i) {
      json::Object o = planJSON(r.best[i], vocab);
      o["why_lost"] = whyLost(r.best[0], r.best[i], search.objective);
      runners.push_back(std::move(o));
    }
    return json::Object{
        {"profile", hw.name},
        {"calibrated", hw.calibrated()},
        {"devices", search.devices},
        {"objective", objectiveName(search.objective)},
        {"memory_margin", settings.memoryMargin},
        {"memory_limit_bytes", int64_t(double(hw.memoryBytes) *
                                       (1 - settings.memoryMargin))},
        {"balance_threshold", search.balanceThreshold},
        {"global_batch", settings.globalBatch},
        {"model",
         json::Object{{"parameters", m.parameters},
                      {"units", units},
                      {"batch", m.modelBatch},
                      {"sequence_length", m.sequenceLength},
                      {"dtype", m.dtype},
                      {"batch_scaling", m.batchProbed ? "probed (dp=2)"
                                                      : "inferred (odd batch)"},
                      {"training_flops_per_model_batch", m.trainingFlops}}},
        {"search",
         json::Object{{"enumerated", r.enumerated},
                      {"priced", r.evaluated},
                      {"pruned_by_memory", r.prunedByMemory},
                      {"pruned_by_time", r.prunedByTime},
                      {"pruned_by_divisibility", r.prunedByDivisibility},
                      {"infeasible", r.infeasible},
                      {"probe_seconds", probeSeconds},
                      {"search_seconds", r.seconds}}},
        {"applicable", applicable},
        {"plan", planJSON(r.best.front(), vocab)},
        {"runners_up", std::move(runners)}};
  }

  std::string textReport(const HardwareProfile &hw, const ModelCosts &m,
                         const SearchResult &r, const SearchOptions &search,
                         const CostSettings &settings, bool applicable,
                         double probeSeconds) {
    const Candidate &c = r.best.front();
    const Estimate &e = c.estimate;
    std::string s;
    llvm::raw_string_ostream os(s);
    os << llvm::formatv("plan for {0} device(s) of {1}{2}, objective {3}, "
                        "global batch {4} x {5} tokens\n",
                        search.devices, hw.name,
                        hw.calibrated() ? " (calibrated)" : "",
                        objectiveName(search.objective), settings.globalBatch,
                        m.sequenceLength);
    os << "  chosen: " << c.plan.str() << "\n";
    if (!applicable)
      os << llvm::formatv("  (a report only: the plan needs the model "
                          "written for {0} sequence(s) per micro-batch)\n",
                          c.plan.microBatchSize * double(c.plan.dp));
    bool tera = e.hardwareFlopsPerDevice >= 1e12;
    os << llvm::formatv("  predicted step {0}, {1:f0} tokens/s, {2:f2} "
                        "{3}FLOP/s per device ({4:f2} of the model), bubble "
                        "{5:f1}%, stage imbalance {6:f3}\n",
                        humanTime(e.stepTime), e.tokensPerSecond,
                        e.hardwareFlopsPerDevice / (tera ? 1e12 : 1e9),
                        tera ? "T" : "G",
                        e.modelFlopsPerDevice / (tera ? 1e12 : 1e9),
                        100 * e.bubbleFraction, e.imbalance);
    os << llvm::formatv("  time: compute {0} (recompute {1}), tp "
                        "communication {2}, pipeline sends {3}, dp "
                        "communication {4} ({5} exposed), optimizer {6}\n",
                        humanTime(e.computeTime - e.recomputeTime),
                        humanTime(e.recomputeTime),
                        humanTime(e.tensorCommTime),
                        humanTime(e.pipelineCommTime),
                        humanTime(e.dataCommTime),
                        humanTime(e.exposedDataCommTime),
                        humanTime(e.optimizerTime));
    os << llvm::formatv("  memory per rank: {0} of {1}:",
                        formatBytes(e.peakMemory),
                        formatBytes(double(hw.memoryBytes) *
                                   (1 - settings.memoryMargin)));
    for (int64_t k = 0; k < kMemoryKinds; ++k)
      os << " " << memoryKindName(MemoryKind(k)) << " "
         << formatBytes(e.memory[k]);
    os << "\n  communication per rank and step:";
    if (e.commBytes.empty())
      os << " none";
    for (auto &[name, bytes] : e.commBytes)
      os << " " << name << " " << formatBytes(bytes);
    os << llvm::formatv("\n  searched {0} plans ({1} priced; pruned: {2} by "
                        "memory, {3} by time, {4} by divisibility; {5} over "
                        "memory or balance) in {6:f3} s after {7:f3} s of "
                        "probes\n",
                        r.enumerated, r.evaluated, r.prunedByMemory,
                        r.prunedByTime, r.prunedByDivisibility, r.infeasible,
                        r.seconds, probeSeconds);
    for (size_t i = 1; i < r.best.size(); ++i)
      os << llvm::formatv("  runner-up {0}: {1} — {2}\n", i,
                          r.best[i].plan.str(),
                          whyLost(c, r.best[i], search.objective));
    return s;
  }
};
} // namespace
