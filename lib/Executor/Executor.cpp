//===- Executor.cpp - run a function on one or N simulated ranks ----------===//

#include "rtx/Executor/Executor.h"

#include "Interpreter.h"
#include "Reassembly.h"
#include "UserTensors.h"
#include "SimulatedRanks.h"
#include "StepPrograms.h"
#include "StepReports.h"

#include "rtxrt/program/Arguments.h"
#include "rtxrt/offload/OffloadStore.h"

#include <chrono>
#include <limits>

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Tensor;

func::FuncOp mlir::rtx::findEntry(ModuleOp module, StringRef entry) {
  SmallVector<func::FuncOp> functions;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal())
      functions.push_back(f);
  std::string names;
  for (auto f : functions)
    names += " @" + f.getSymName().str();
  if (!entry.empty()) {
    for (auto f : functions)
      if (f.getSymName() == entry)
        return f;
    throw Error("no function @" + entry.str() +
                " in the module (functions:" + names + ")");
  }
  if (functions.size() == 1)
    return functions.front();
  for (auto f : functions)
    if (f.getSymName() == "main")
      return f;
  throw Error(functions.empty()
                  ? std::string("the module has no function to run")
                  : "the module has several functions; choose one with "
                    "--entry (functions:" +
                        names + ")");
}

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

/// The mesh the ranks form: the module's mesh with `numRanks` ranks; null
/// for one rank without one.
static MeshOp findMesh(ModuleOp module, int64_t numRanks) {
  std::vector<MeshOp> matching;
  std::string seen;
  for (auto mesh : module.getOps<MeshOp>()) {
    seen += " @" + mesh.getSymName().str() + " (" +
            std::to_string(mesh.getNumRanks()) + " ranks)";
    if (mesh.getNumRanks() == numRanks)
      matching.push_back(mesh);
  }
  if (numRanks == 1 && matching.empty())
    return MeshOp();
  if (matching.size() != 1)
    throw Error("--ranks " + std::to_string(numRanks) +
                " needs exactly one "
                "rtx.mesh with " +
                std::to_string(numRanks) + " ranks; the module has" +
                (seen.empty() ? " none" : seen));
  return matching.front();
}

static rtxrt::MeshLayout layoutOf(MeshOp mesh) {
  if (!mesh)
    return rtxrt::MeshLayout();
  std::vector<std::string> names;
  for (Attribute name : mesh.getAxisNames())
    names.push_back(cast<StringAttr>(name).getValue().str());
  return rtxrt::MeshLayout(names, toVector(mesh.getAxisSizes()));
}

/// Throws Error for options no run can have.
static void checkOptions(const ExecutorOptions &options) {
  int64_t numRanks = options.numRanks;
  if (numRanks < 1)
    throw Error("--ranks must be at least 1");
  if (numRanks > kMaxSimulatedRanks)
    throw Error("--ranks " + std::to_string(numRanks) +
                " is more than one process simulates (at most " +
                std::to_string(kMaxSimulatedRanks) +
                " ranks, one thread each); run the emitted program under "
                "rtx-launch instead");
  // NaN compares false, so test for the accepted range, not against it.
  if (!(options.collectiveTimeoutSeconds > 0 &&
        options.collectiveTimeoutSeconds <= 86400))
    throw Error("--timeout needs a number of seconds in (0, 86400], got " +
                std::to_string(options.collectiveTimeoutSeconds));
  if (options.steps < 1)
    throw Error("--steps must be at least 1");
}

/// Where arguments come from, as the runtime's loader reads them.
static rtxrt::ArgumentSources sourcesOf(const ExecutorOptions &options) {
  rtxrt::ArgumentSources sources;
  sources.inputsDir = options.inputsDir;
  sources.drawInputs = options.randomInputs;
  sources.drawHint = " (or pass --random)";
  sources.seed = options.seed;
  sources.params = options.params;
  sources.paramsPartial = options.paramsPartial;
  sources.stateDir = options.stateDir;
  sources.keepGlobals = true; // the simulated ranks read each file once
  return sources;
}

/// A simulated rank's offload store; null when `args` offload nothing.
/// rtx-run keeps every value of a step until its end, so its store does
/// not bound the buffers in flight (emitted programs do).
static std::unique_ptr<rtxrt::OffloadStore>
openRankOffload(const std::vector<rtxrt::ArgSpec> &args, const std::string &dir,
                int64_t rank) {
  std::optional<rtxrt::OffloadOptions> options =
      rtxrt::offloadOptionsFor(args, dir, rank);
  if (!options)
    return nullptr;
  options->maxInFlight = std::numeric_limits<int32_t>::max();
  return rtxrt::OffloadStore::create(*options);
}

namespace {
/// One simulated rank's run: the emitted programs' StepContext over the
/// rank's communicator, the interpreter as its step function.
class RankRunner {
public:
  RankRunner(const ExecutorOptions &options, const StepPrograms &step,
             rtxrt::ArgumentLoader &loader, StepReports &reports)
      : options_(options), step_(step), loader_(loader), reports_(reports) {}

  /// Runs every step on `rank`; returns its results of the last one.
  std::vector<Tensor> run(int64_t rank, rtxrt::Communicator &comm) const;

private:
  RankEnvironment environmentOf(int64_t rank, const RankProgram &p,
                                rtxrt::StepContext &context) const;

  const ExecutorOptions &options_;
  const StepPrograms &step_;
  /// Shared by the ranks: it reads each file once (keepGlobals).
  rtxrt::ArgumentLoader &loader_;
  StepReports &reports_;
};
} // namespace

RankEnvironment RankRunner::environmentOf(int64_t rank, const RankProgram &p,
                                          rtxrt::StepContext &context) const {
  RankEnvironment env;
  env.rank = rank;
  env.mesh = step_.mesh();
  env.context = &context;
  env.hasPeers = options_.numRanks > 1;
  env.getParam = [this, rank](const ParamSpec &param) {
    return loader_.block(toArgSpec(param), rank);
  };
  env.getInput = [this, &p, rank](InputOp input) {
    if (const ProgramArgument *argument = p.program.find(input.getResult()))
      return loader_.block(p.args[argument - p.program.arguments.data()], rank);
    throw Error("unknown input '" + input.getName().str() + "'");
  };
  return env;
}

std::vector<Tensor> RankRunner::run(int64_t rank,
                                    rtxrt::Communicator &comm) const {
  const RankProgram &p = step_.of(rank);
  // Offloaded buffers live in the rank's own store; the step gets a
  // reference.
  std::unique_ptr<rtxrt::OffloadStore> offload =
      openRankOffload(p.args, options_.offloadDir, rank);
  rtxrt::StepContext context(rank, step_.mesh(), comm);
  context.setOffload(offload.get());
  RankEnvironment env = environmentOf(rank, p, context);
  std::vector<Tensor> values;
  func::FuncOp function = p.function; // MLIR op handles are not const
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    values.push_back(
        rtxrt::loadOrOffload(loader_, offload.get(), p.args[i], rank));
  std::vector<Tensor> results;
  for (int64_t step = 0; step < options_.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    results = interpret(function, values, env);
    context.finishStep();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    reports_.stepDone(rank, step,
                      reports_.holdsLoss(rank)
                          ? results[step_.lossIndex()].getAsDouble(0)
                          : 0,
                      ms);
    p.feedback.apply(values, results);
  }
  for (size_t i = 0; i < results.size(); ++i)
    if (const ProgramResult &r = p.program.results[i]; !r.offload.empty())
      results[i] = offload->read(r.stateKey);
  return results;
}

ExecutionResult mlir::rtx::execute(ModuleOp module,
                                   const ExecutorOptions &options,
                                   const std::map<std::string, Tensor> &given) {
  StepFunctions functions = stepFunctions(module, options.entry);
  checkOptions(options);
  MeshOp meshOp = findMesh(module, options.numRanks);
  rtxrt::MeshLayout mesh = layoutOf(meshOp);
  StepPrograms step(functions, meshOp, mesh);

  rtxrt::ArgumentLoader loader(mesh, sourcesOf(options));
  for (const auto &[name, value] : given)
    loader.giveInput(name, value);
  for (const auto &[name, value] : options.paramValues)
    loader.giveParam(name, value);
  // Every input, read or drawn once for all ranks.
  ExecutionResult result;
  for (const RankProgram &p : step.programs())
    for (const rtxrt::ArgSpec &arg : p.args)
      if (arg.kind == rtxrt::ArgSpec::Input && !result.inputs.count(arg.name))
        result.inputs[arg.name] = loader.globalInput(arg);

  int64_t tokens = 0;
  if (step.lossOwner() >= 0)
    tokens = rtxrt::tokensPerStep(step.programs()[step.lossOwner()].args, mesh);
  StepReports reports(options, step, options.numRanks, tokens);
  RankRunner runner(options, step, loader, reports);
  std::vector<std::vector<Tensor>> rankResults(options.numRanks);
  runSimulatedRanks(options.numRanks, options.collectiveTimeoutSeconds,
                    [&](int64_t rank, rtxrt::Communicator &comm) {
                      rankResults[rank] = runner.run(rank, comm);
                    });
  result.losses = reports.finish();
  result.results = Reassembly(step, rankResults).results();
  result.userResults =
      joinUserParts(result.results, stepResultKeys(step), paramParts(step));
  return result;
}
