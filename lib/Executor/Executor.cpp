//===- Executor.cpp - run a function on one or N simulated ranks ----------===//

#include "rtx/Executor/Executor.h"

#include "Distribution.h"
#include "Interpreter.h"

#include "rtx/Analysis/ProgramDescription.h"
#include "rtxrt/program/Arguments.h"
#include "rtxrt/observe/MetricsFile.h"

#include "mlir/IR/Diagnostics.h"

#include <chrono>
#include <limits>
#include <set>
#include <system_error>
#include <thread>

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Shape;
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

static Shape shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
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

/// describeProgram, its diagnostic thrown as an Error.
static ProgramDescription describeOrThrow(func::FuncOp function, MeshOp mesh) {
  std::string message;
  ScopedDiagnosticHandler handler(function.getContext(), [&](Diagnostic &d) {
    if (message.empty())
      message = d.str();
    return success();
  });
  FailureOr<ProgramDescription> program = describeProgram(function, mesh);
  if (failed(program))
    throw Error(message);
  return std::move(*program);
}

/// The runtime's view of a parameter (rtxrt/program/Arguments.h loads it).
static rtxrt::ArgSpec paramArgSpec(const std::string &name, InitAttr init,
                                   int64_t seed, RankedTensorType type,
                                   ShardingAttr sharding) {
  rtxrt::ArgSpec spec;
  spec.kind = rtxrt::ArgSpec::Param;
  spec.name = name;
  spec.init = toRuntime(init.getKind());
  spec.a = init.getA().convertToDouble();
  spec.b = init.getB().convertToDouble();
  spec.seed = seed;
  spec.shape = shapeOf(type);
  spec.dtype = toDType(type.getElementType());
  spec.sharding = toRuntimeSharding(sharding);
  return spec;
}

/// The runtime's view of an `rtx.param` op.
static rtxrt::ArgSpec toArgSpec(const ParamSpec &param) {
  return paramArgSpec(param.name, param.init, param.seed, param.type,
                      param.sharding);
}

/// The runtime's view of an argument of the step.
static rtxrt::ArgSpec toArgSpec(const ProgramArgument &argument) {
  using Role = ProgramArgument::Role;
  rtxrt::ArgSpec spec;
  if (argument.role == Role::Parameter && argument.members.empty())
    spec = paramArgSpec(argument.name, argument.init, argument.seed,
                        argument.type, argument.sharding);
  spec.kind = argument.role == Role::Parameter        ? rtxrt::ArgSpec::Param
              : argument.role == Role::OptimizerState ? rtxrt::ArgSpec::State
                                                      : rtxrt::ArgSpec::Input;
  spec.name = argument.name;
  spec.state = argument.stateKey;
  spec.shape = shapeOf(argument.type);
  spec.dtype = toDType(argument.type.getElementType());
  spec.sharding = toRuntimeSharding(argument.sharding);
  spec.bound = argument.dataBound;
  spec.offload = argument.offload;
  if (!argument.members.empty()) {
    spec.flat.axis = argument.flatAxis;
    spec.flat.length = argument.flatLength;
    spec.flat.offsets = argument.offsets;
    for (const ProgramArgument &member : argument.members) {
      spec.members.push_back(toArgSpec(member));
      spec.flat.shapes.push_back(shapeOf(member.type));
    }
  }
  return spec;
}

/// The runtime's view of a flat result's layout.
static rtxrt::FlatLayout flatLayoutOf(const ProgramResult &result) {
  rtxrt::FlatLayout layout;
  layout.axis = result.flatAxis;
  layout.length = result.flatLength;
  layout.offsets = result.offsets;
  for (const ProgramResult &member : result.members)
    layout.shapes.push_back(shapeOf(member.type));
  return layout;
}

/// The canonical replica holding the same block as `rank`.
static int64_t canonicalReplicaOf(ShardingAttr sharding,
                                  const rtxrt::MeshLayout &mesh, int64_t rank) {
  std::vector<int64_t> coords = mesh.coordinates(rank);
  for (int64_t candidate = 0; candidate < mesh.numRanks(); ++candidate) {
    if (!isCanonicalReplica(sharding, mesh, candidate))
      continue;
    std::vector<int64_t> other = mesh.coordinates(candidate);
    bool same = true;
    for (size_t a = 0; a < coords.size() && same; ++a) {
      const std::string &axis = mesh.axisNames()[a];
      bool used = false;
      if (sharding) {
        for (int64_t d = 0; d < sharding.getRank() && !used; ++d)
          used = llvm::is_contained(sharding.getDimAxes(d), axis);
        used = used || llvm::is_contained(sharding.getPartialAxes(), axis);
      }
      same = !used || coords[a] == other[a];
    }
    if (same)
      return candidate;
  }
  return 0;
}

/// Replicas computed by different ranks agree up to rounding.
static bool sameValues(const Tensor &a, const Tensor &b) {
  double diff2 = 0, ref2 = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.getAsDouble(i), y = b.getAsDouble(i);
    diff2 += (x - y) * (x - y);
    ref2 += y * y;
  }
  return diff2 <= 1e-12 * std::max(ref2, 1e-30);
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
/// What one pipeline coordinate's ranks run (the whole step when the module
/// has no pipeline): its function, what each argument is, and where each of
/// its results sits among the step's results.
struct RankProgram {
  func::FuncOp function;
  ProgramDescription program;
  std::vector<rtxrt::ArgSpec> args;
  std::vector<int64_t> stepResult; // per result of `function`
};
} // namespace

/// The functions rtx-pipeline made, by pipeline coordinate; empty when the
/// module has none. `axis` receives the pipeline's mesh axis.
static std::vector<func::FuncOp> pipelineFunctions(ModuleOp module,
                                                   std::string &axis) {
  std::vector<func::FuncOp> byRank;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto rank =
        f->getAttrOfType<IntegerAttr>(RTXDialect::getPipelineRankAttrName());
    if (!rank || f.isExternal())
      continue;
    if (auto a =
            f->getAttrOfType<StringAttr>(RTXDialect::getPipelineAxisAttrName()))
      axis = a.getValue().str();
    size_t r = rank.getInt();
    if (byRank.size() <= r)
      byRank.resize(r + 1);
    if (byRank[r])
      throw Error("functions @" + byRank[r].getSymName().str() + " and @" +
                  f.getSymName().str() + " both run pipeline rank " +
                  std::to_string(r));
    byRank[r] = f;
  }
  for (size_t r = 0; r < byRank.size(); ++r)
    if (!byRank[r])
      throw Error("no function runs pipeline rank " + std::to_string(r) +
                  " of " + std::to_string(byRank.size()));
  return byRank;
}

ExecutionResult mlir::rtx::execute(ModuleOp module,
                                   const ExecutorOptions &options,
                                   const std::map<std::string, Tensor> &given) {
  std::string pipelineAxis;
  std::vector<func::FuncOp> functions =
      options.entry.empty() ? pipelineFunctions(module, pipelineAxis)
                            : std::vector<func::FuncOp>();
  bool pipelined = !functions.empty();
  if (!pipelined)
    functions = {findEntry(module, options.entry)};
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
  MeshOp meshOp = findMesh(module, numRanks);
  rtxrt::MeshLayout mesh = layoutOf(meshOp);
  // A rank's pipeline coordinate picks its program; with the coordinate
  // set to 0 it names the rank whose place the shardings describe.
  size_t ppAxis = 0;
  if (pipelined) {
    if (!llvm::is_contained(mesh.axisNames(), pipelineAxis) ||
        mesh.axisSize(pipelineAxis) != int64_t(functions.size()))
      throw Error("the module has " + std::to_string(functions.size()) +
                  " pipeline functions, but mesh " + mesh.spec() +
                  " has no axis \"" + pipelineAxis + "\" of that size");
    ppAxis = mesh.axisIndex(pipelineAxis);
  }
  auto coordinateOf = [&](int64_t rank) -> size_t {
    return pipelined ? mesh.coordinates(rank)[ppAxis] : 0;
  };
  auto withCoordinate = [&](int64_t rank, int64_t c) {
    if (!pipelined)
      return rank;
    std::vector<int64_t> coords = mesh.coordinates(rank);
    coords[ppAxis] = c;
    return mesh.rankOf(coords);
  };

  // What every argument is, where its value comes from, and which results
  // carry state into the next step; per pipeline coordinate.
  std::vector<RankProgram> programs;
  int64_t numStepResults = 0;
  // Step results that flat buffers' members are (rtx-shard-state).
  std::set<int64_t> flatMembers;
  for (func::FuncOp function : functions) {
    RankProgram p{function, describeOrThrow(function, meshOp), {}, {}};
    for (const ProgramArgument &argument : p.program.arguments)
      p.args.push_back(toArgSpec(argument));
    for (auto [i, r] : llvm::enumerate(p.program.results)) {
      if (!r.stateKey.empty() && r.feedsArgument < 0)
        throw Error("@" + function.getSymName().str() + ": result " +
                    std::to_string(i) + " carries state '" + r.stateKey +
                    "' that no argument receives");
      if (!r.members.empty()) {
        for (const ProgramResult &member : r.members) {
          flatMembers.insert(member.index);
          numStepResults = std::max(numStepResults, member.index + 1);
        }
        p.stepResult.push_back(-1);
        continue;
      }
      p.stepResult.push_back(r.index >= 0 ? r.index : int64_t(i));
      numStepResults = std::max(numStepResults, p.stepResult.back() + 1);
    }
    programs.push_back(std::move(p));
  }
  // Per result of the step: the first coordinate that returns it and the
  // index there.
  std::vector<std::pair<int64_t, int64_t>> owner(numStepResults, {-1, -1});
  for (auto [c, p] : llvm::enumerate(programs))
    for (auto [j, i] : llvm::enumerate(p.stepResult))
      if (i >= 0 && owner[i].first < 0)
        owner[i] = {int64_t(c), int64_t(j)};
  for (auto [i, o] : llvm::enumerate(owner))
    if (o.first < 0 && !flatMembers.count(i))
      throw Error("no pipeline function returns result " + std::to_string(i) +
                  " of the step");
  // The loss: the first coordinate's program that has one.
  int64_t lossOwner = -1;
  for (auto [c, p] : llvm::enumerate(programs))
    if (p.program.lossResult >= 0 && lossOwner < 0)
      lossOwner = c;

  rtxrt::ArgumentSources sources;
  sources.inputsDir = options.inputsDir;
  sources.drawInputs = options.randomInputs;
  sources.drawHint = " (or pass --random)";
  sources.seed = options.seed;
  sources.paramsDir = options.paramsDir;
  sources.paramsPartial = options.paramsPartial;
  sources.stateDir = options.stateDir;
  sources.keepGlobals = true; // the simulated ranks read each file once
  rtxrt::ArgumentLoader loader(mesh, sources);
  for (const auto &[name, value] : given)
    loader.giveInput(name, value);
  for (const auto &[name, value] : options.paramValues)
    loader.giveParam(name, value);

  // Every input, read or drawn once for all ranks.
  ExecutionResult result;
  for (const RankProgram &p : programs)
    for (const rtxrt::ArgSpec &arg : p.args)
      if (arg.kind == rtxrt::ArgSpec::Input && !result.inputs.count(arg.name))
        result.inputs[arg.name] = loader.globalInput(arg);

  // Each step is reported (options.onStep, the metrics file) as the loss's
  // first rank finishes it, unless its loss holds partial sums: that one is
  // assembled from every rank after the run, and all steps are reported
  // then.
  rtxrt::MetricsFile metrics(options.metricsPath);
  int64_t tokens = 0;
  if (lossOwner >= 0)
    tokens = rtxrt::tokensPerStep(programs[lossOwner].args, mesh);
  auto report = [&](const rtxrt::StepRecord &record) {
    metrics.step(record, rtxrt::tokensPerSecond(tokens, record.ms));
    if (options.onStep)
      options.onStep(record);
  };
  int64_t lossIndex =
      lossOwner >= 0 ? programs[lossOwner].program.lossResult : -1;
  ShardingAttr lossSharding =
      lossIndex >= 0 ? programs[lossOwner].program.results[lossIndex].sharding
                     : ShardingAttr();
  bool liveReport =
      lossIndex < 0 || !lossSharding || lossSharding.getPartialAxes().empty();
  int64_t reportingRank = withCoordinate(0, std::max<int64_t>(lossOwner, 0));
  // Per step, per rank: the local loss (assembled after the run); per step,
  // the reporting rank's time.
  std::vector<std::vector<double>> localLosses(
      options.steps, std::vector<double>(numRanks, 0.0));
  std::vector<double> stepMs(options.steps, 0.0);
  auto recordOf = [&](int64_t step, double loss) {
    rtxrt::StepRecord record;
    record.step = step + 1;
    record.globalStep = step + 1; // rtx-run counts its own steps only
    record.hasLoss = lossIndex >= 0;
    record.loss = loss;
    record.ms = stepMs[step];
    return record;
  };

  auto runRank = [&](int64_t rank, InProcessWorld *world) {
    RankProgram &p = programs[coordinateOf(rank)];
    RankEnvironment env;
    env.rank = rank;
    env.mesh = mesh;
    env.world = world;
    env.getParam = [&, rank](const ParamSpec &param) {
      return loader.block(toArgSpec(param), rank);
    };
    env.getInput = [&, rank](InputOp input) {
      if (const ProgramArgument *argument = p.program.find(input.getResult()))
        return loader.block(p.args[argument - p.program.arguments.data()],
                            rank);
      throw Error("unknown input '" + input.getName().str() + "'");
    };
    // Offloaded buffers live in the rank's own store; the step gets a
    // reference.
    std::unique_ptr<rtxrt::OffloadStore> offload =
        openRankOffload(p.args, options.offloadDir, rank);
    env.offload = offload.get();
    std::vector<Tensor> values;
    for (unsigned i = 0; i < p.function.getNumArguments(); ++i)
      values.push_back(
          rtxrt::loadOrOffload(loader, offload.get(), p.args[i], rank));
    std::vector<Tensor> results;
    bool hasLoss = int64_t(coordinateOf(rank)) == lossOwner;
    for (int64_t step = 0; step < options.steps; ++step) {
      auto start = std::chrono::steady_clock::now();
      results = interpret(p.function, values, env);
      if (offload)
        offload->flush();
      if (rank == reportingRank)
        stepMs[step] = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      double loss = hasLoss ? results[lossIndex].getAsDouble(0) : 0;
      localLosses[step][rank] = loss;
      if (liveReport && rank == reportingRank)
        report(recordOf(step, loss));
      for (size_t i = 0; i < results.size(); ++i)
        if (int64_t arg = p.program.results[i].feedsArgument; arg >= 0)
          values[arg] = results[i];
    }
    for (size_t i = 0; i < results.size(); ++i)
      if (const ProgramResult &r = p.program.results[i]; !r.offload.empty())
        results[i] = offload->read(r.stateKey);
    return results;
  };

  std::vector<std::vector<Tensor>> rankResults(numRanks);
  if (numRanks == 1) {
    rankResults[0] = runRank(0, nullptr);
  } else {
    InProcessWorld world(numRanks, options.collectiveTimeoutSeconds);
    std::vector<std::string> errors(numRanks);
    std::vector<std::thread> threads;
    std::string startError;
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      try {
        threads.emplace_back([&, rank] {
          try {
            rankResults[rank] = runRank(rank, &world);
            world.finish(rank);
          } catch (const std::exception &error) {
            errors[rank] = error.what();
            world.abort(rank, error.what());
          }
        });
      } catch (const std::system_error &error) {
        // Out of threads: stop the ranks that started (they would wait for
        // the missing ones) and say why, instead of std::terminate.
        startError = "cannot start simulated rank " + std::to_string(rank) +
                     " of " + std::to_string(numRanks) + ": " + error.what() +
                     " (fewer --ranks, or raise the thread limit)";
        world.abort(rank, startError);
        break;
      }
    }
    for (std::thread &thread : threads)
      thread.join();
    if (!startError.empty())
      throw Error(startError);
    // Report the root cause, not the ranks that stopped because of it.
    std::string first;
    for (const std::string &error : errors) {
      if (error.empty())
        continue;
      if (first.empty() || first.rfind("stopped because", 0) == 0)
        first = error;
    }
    if (!first.empty())
      throw Error(first);
  }

  // The loss of every step: the canonical replicas' values, summed over the
  // axes that hold partial sums.
  if (lossIndex >= 0) {
    for (int64_t step = 0; step < options.steps; ++step) {
      double loss = 0;
      for (int64_t rank = 0; rank < numRanks; ++rank)
        if (int64_t(coordinateOf(rank)) == lossOwner &&
            isCanonicalReplica(lossSharding, mesh, withCoordinate(rank, 0)))
          loss += localLosses[step][rank];
      result.losses.push_back(loss);
      if (!liveReport)
        report(recordOf(step, loss));
    }
  }

  // Reassemble every result to its global shape. Replicas of a block must
  // agree: a rank that disagrees holds a partial sum or a wrong value that
  // the sharding does not declare, a partitioning bug worth reporting. A
  // result that several pipeline coordinates return (a weight two stages
  // tie, the optimizer's step count) must be the same on all of them.
  for (int64_t i = 0; i < numStepResults; ++i) {
    if (flatMembers.count(i)) {
      result.results.push_back(Tensor()); // filled below
      continue;
    }
    auto [c0, j0] = owner[i];
    const RankProgram &p0 = programs[c0];
    ShardingAttr sharding = p0.program.results[j0].sharding;
    Shape local = shapeOf(p0.program.results[j0].type);
    Tensor global(getLocalBlock(sharding, local, mesh, 0).globalShape,
                  rankResults[withCoordinate(0, c0)][j0].dtype());
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      int64_t c = coordinateOf(rank);
      if (c != c0) {
        const RankProgram &p = programs[c];
        auto it = llvm::find(p.stepResult, i);
        if (it == p.stepResult.end())
          continue;
        int64_t other = withCoordinate(rank, c0);
        if (!sameValues(rankResults[rank][it - p.stepResult.begin()],
                        rankResults[other][j0]))
          throw Error("result " + std::to_string(i) + ": pipeline ranks " +
                      std::to_string(rank) + " and " + std::to_string(other) +
                      " hold different values for a tensor both stages keep "
                      "(a tied weight's copies diverged)");
        continue;
      }
      int64_t place = withCoordinate(rank, 0);
      if (!isCanonicalReplica(sharding, mesh, place)) {
        int64_t canonical =
            withCoordinate(canonicalReplicaOf(sharding, mesh, place), c0);
        if (!sameValues(rankResults[rank][j0], rankResults[canonical][j0]))
          throw Error("result " + std::to_string(i) + ": rank " +
                      std::to_string(rank) + " and rank " +
                      std::to_string(canonical) +
                      " hold different values for the same block, but its "
                      "sharding says they are replicas");
        continue;
      }
      LocalBlock block = getLocalBlock(sharding, local, mesh, place);
      accumulateBlock(global, rankResults[rank][j0], block.offsets);
    }
    result.results.push_back(global);
  }
  // Flat buffers: each member from the shards of the ranks of its pipeline
  // coordinate (all ranks without pipelines). A member two stages keep (a
  // tied weight) must come out the same from both.
  for (auto [c, p] : llvm::enumerate(programs))
    for (auto [j, r] : llvm::enumerate(p.program.results)) {
      if (r.members.empty())
        continue;
      rtxrt::FlatLayout layout = flatLayoutOf(r);
      std::vector<Tensor> shards(numRanks);
      for (int64_t rank = 0; rank < numRanks; ++rank)
        if (coordinateOf(rank) == c)
          shards[rank] = rankResults[rank][j];
      size_t stage = c;
      auto placeOf = [&](int64_t rank) -> int64_t {
        return coordinateOf(rank) == stage ? withCoordinate(rank, 0) : -1;
      };
      for (auto [m, member] : llvm::enumerate(r.members)) {
        Tensor global = rtxrt::assembleFlatMember(
            layout, shards, mesh, m, toRuntimeSharding(member.sharding),
            shapeOf(member.type), shards[withCoordinate(0, c)].dtype(),
            placeOf);
        Tensor &slot = result.results[member.index];
        if (slot.defined() && !sameValues(slot, global))
          throw Error("result " + std::to_string(member.index) +
                      ": pipeline stages hold different values for a tensor "
                      "both keep (a tied weight's copies diverged)");
        slot = global;
      }
    }
  return result;
}
