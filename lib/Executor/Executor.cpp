//===- Executor.cpp - run a function on one or N simulated ranks ----------===//

#include "rtx/Executor/Executor.h"

#include "Distribution.h"
#include "Interpreter.h"

#include "rtx/Analysis/ProgramDescription.h"
#include "rtxrt/Arguments.h"
#include "rtxrt/Metrics.h"

#include "mlir/IR/Diagnostics.h"

#include <chrono>
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

/// The runtime's view of a parameter (rtxrt/Arguments.h loads it).
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
  if (argument.role == Role::Parameter)
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
  return spec;
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

ExecutionResult mlir::rtx::execute(ModuleOp module,
                                   const ExecutorOptions &options,
                                   const std::map<std::string, Tensor> &given) {
  func::FuncOp function = findEntry(module, options.entry);
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

  // What every argument is, where its value comes from, and which results
  // carry state into the next step.
  ProgramDescription program = describeOrThrow(function, meshOp);
  std::vector<rtxrt::ArgSpec> args;
  for (const ProgramArgument &argument : program.arguments)
    args.push_back(toArgSpec(argument));
  for (auto [i, r] : llvm::enumerate(program.results))
    if (!r.stateKey.empty() && r.feedsArgument < 0)
      throw Error("result " + std::to_string(i) + " carries state '" +
                  r.stateKey + "' that no argument receives");
  int64_t lossIndex = program.lossResult;

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
  for (const rtxrt::ArgSpec &arg : args)
    if (arg.kind == rtxrt::ArgSpec::Input)
      result.inputs[arg.name] = loader.globalInput(arg);

  // Each step is reported (options.onStep, the metrics file) as rank 0
  // finishes it, unless its loss holds partial sums: that one is assembled
  // from every rank after the run, and all steps are reported then.
  rtxrt::MetricsFile metrics(options.metricsPath);
  int64_t tokens = rtxrt::tokensPerStep(args, mesh);
  auto report = [&](const rtxrt::StepRecord &record) {
    metrics.step(record, rtxrt::tokensPerSecond(tokens, record.ms));
    if (options.onStep)
      options.onStep(record);
  };
  ShardingAttr lossSharding =
      lossIndex >= 0 ? program.results[lossIndex].sharding : ShardingAttr();
  bool liveReport =
      lossIndex < 0 || !lossSharding || lossSharding.getPartialAxes().empty();
  // Per step, per rank: the local loss (assembled after the run); per step,
  // rank 0's time.
  std::vector<std::vector<double>> localLosses(
      options.steps, std::vector<double>(numRanks, 0.0));
  std::vector<double> stepMs(options.steps, 0.0);
  auto recordOf = [&](int64_t step, double loss) {
    rtxrt::StepRecord record;
    record.step = step + 1;
    record.hasLoss = lossIndex >= 0;
    record.loss = loss;
    record.ms = stepMs[step];
    return record;
  };

  auto runRank = [&](int64_t rank, InProcessWorld *world) {
    RankEnvironment env;
    env.rank = rank;
    env.mesh = mesh;
    env.world = world;
    env.getParam = [&, rank](const ParamSpec &param) {
      return loader.block(toArgSpec(param), rank);
    };
    env.getInput = [&, rank](InputOp input) {
      if (const ProgramArgument *argument = program.find(input.getResult()))
        return loader.block(args[argument - program.arguments.data()], rank);
      throw Error("unknown input '" + input.getName().str() + "'");
    };
    std::vector<Tensor> values;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      values.push_back(loader.block(args[i], rank));
    std::vector<Tensor> results;
    for (int64_t step = 0; step < options.steps; ++step) {
      auto start = std::chrono::steady_clock::now();
      results = interpret(function, values, env);
      if (rank == 0)
        stepMs[step] = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      double loss = lossIndex >= 0 ? results[lossIndex].getAsDouble(0) : 0;
      localLosses[step][rank] = loss;
      if (liveReport && rank == 0)
        report(recordOf(step, loss));
      for (size_t i = 0; i < results.size(); ++i)
        if (int64_t arg = program.results[i].feedsArgument; arg >= 0)
          values[arg] = results[i];
    }
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
        if (isCanonicalReplica(lossSharding, mesh, rank))
          loss += localLosses[step][rank];
      result.losses.push_back(loss);
      if (!liveReport)
        report(recordOf(step, loss));
    }
  }

  // Reassemble every result to its global shape. Replicas of a block must
  // agree: a rank that disagrees holds a partial sum or a wrong value that
  // the sharding does not declare, a partitioning bug worth reporting.
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    ShardingAttr sharding = program.results[i].sharding;
    Shape local = shapeOf(program.results[i].type);
    Tensor global(getLocalBlock(sharding, local, mesh, 0).globalShape,
                  rankResults[0][i].dtype());
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      if (!isCanonicalReplica(sharding, mesh, rank)) {
        int64_t canonical = canonicalReplicaOf(sharding, mesh, rank);
        if (!sameValues(rankResults[rank][i], rankResults[canonical][i]))
          throw Error("result " + std::to_string(i) + ": rank " +
                      std::to_string(rank) + " and rank " +
                      std::to_string(canonical) +
                      " hold different values for the same block, but its "
                      "sharding says they are replicas");
        continue;
      }
      LocalBlock block = getLocalBlock(sharding, local, mesh, rank);
      accumulateBlock(global, rankResults[rank][i], block.offsets);
    }
    result.results.push_back(global);
  }
  return result;
}
