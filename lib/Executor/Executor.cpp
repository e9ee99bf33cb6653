//===- Executor.cpp - run a function on one or N simulated ranks ----------===//

#include "rtx/Executor/Executor.h"

#include "Distribution.h"
#include "Interpreter.h"

#include "rtxrt/Kernels.h"
#include "rtxrt/Npy.h"
#include "rtxrt/Program.h"
#include "rtxrt/Random.h"

#include <fstream>
#include <mutex>
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

static bool fileExists(const std::string &path) {
  return std::ifstream(path).good();
}

/// The mesh the ranks form: the module's mesh with `numRanks` ranks.
static rtxrt::MeshLayout findMesh(ModuleOp module, int64_t numRanks) {
  std::vector<MeshOp> matching;
  std::string seen;
  for (auto mesh : module.getOps<MeshOp>()) {
    seen += " @" + mesh.getSymName().str() + " (" +
            std::to_string(mesh.getNumRanks()) + " ranks)";
    if (mesh.getNumRanks() == numRanks)
      matching.push_back(mesh);
  }
  if (numRanks == 1 && matching.empty())
    return rtxrt::MeshLayout();
  if (matching.size() != 1)
    throw Error("--ranks " + std::to_string(numRanks) +
                " needs exactly one "
                "rtx.mesh with " +
                std::to_string(numRanks) + " ranks; the module has" +
                (seen.empty() ? " none" : seen));
  std::vector<std::string> names;
  for (Attribute name : matching.front().getAxisNames())
    names.push_back(cast<StringAttr>(name).getValue().str());
  return rtxrt::MeshLayout(names, toVector(matching.front().getAxisSizes()));
}

namespace {
/// A named value that enters the program: a function argument or an input.
struct InputSlot {
  std::string name;
  Type type;
  ShardingAttr sharding;
  Value value;
};

/// What a function argument is: batch data, a parameter, or optimizer state.
struct ArgumentRole {
  enum Kind { Input, Param, State } kind = Input;
  /// For Input: index into the input slots.
  size_t input = 0;
  /// For Param.
  ParamSpec param;
  /// For State (and Param args made by rtx-optimizer): the state key.
  std::string stateKey;
  /// For State: how the argument is sharded.
  ShardingAttr sharding;
};
} // namespace

static ArgumentRole getArgumentRole(func::FuncOp function, unsigned index) {
  ArgumentRole role;
  auto attr = [&](StringRef name) { return function.getArgAttr(index, name); };
  auto sharding = function.getArgAttrOfType<ShardingAttr>(
      index, RTXDialect::getShardingAttrName());
  if (auto state = dyn_cast_or_null<StringAttr>(attr("rtx.state")))
    role.stateKey = state.getValue().str();
  if (auto name = dyn_cast_or_null<StringAttr>(attr("rtx.param"))) {
    role.kind = ArgumentRole::Param;
    auto init = dyn_cast_or_null<InitAttr>(attr("rtx.init"));
    if (!init)
      throw Error("parameter argument '" + name.getValue().str() +
                  "' has no rtx.init initializer");
    int64_t seed = 0;
    if (auto seedAttr = dyn_cast_or_null<IntegerAttr>(attr("rtx.seed")))
      seed = seedAttr.getInt();
    role.param = {name.getValue().str(), init, seed,
                  cast<RankedTensorType>(function.getArgumentTypes()[index]),
                  sharding};
  } else if (!role.stateKey.empty()) {
    role.kind = ArgumentRole::State;
    role.sharding = sharding;
  }
  return role;
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
  if (options.steps < 1)
    throw Error("--steps must be at least 1");
  rtxrt::MeshLayout mesh = findMesh(module, numRanks);

  // What every argument is, and everything that enters as data.
  Block &body = function.getBody().front();
  std::vector<ArgumentRole> roles;
  std::vector<InputSlot> slots;
  for (BlockArgument arg : body.getArguments()) {
    ArgumentRole role = getArgumentRole(function, arg.getArgNumber());
    if (role.kind == ArgumentRole::Input) {
      // Data arguments are numbered among themselves, so a model's `arg0`
      // keeps its name after rtx-optimizer puts parameters and state first.
      role.input = slots.size();
      slots.push_back(
          {"arg" + std::to_string(slots.size()), arg.getType(),
           function.getArgAttrOfType<ShardingAttr>(
               arg.getArgNumber(), RTXDialect::getShardingAttrName()),
           arg});
    }
    roles.push_back(role);
  }
  for (auto input : function.getOps<InputOp>())
    slots.push_back(
        {input.getName().str(), input.getType(),
         input->getAttrOfType<ShardingAttr>(RTXDialect::getShardingAttrName()),
         input.getResult()});

  // Results that carry state into the next step, and the loss.
  std::map<std::string, unsigned> argOfState;
  for (auto [i, role] : llvm::enumerate(roles))
    if (!role.stateKey.empty())
      argOfState[role.stateKey] = i;
  std::vector<int64_t> feedsArg(function.getNumResults(), -1);
  int64_t lossIndex = -1;
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto key = function.getResultAttrOfType<StringAttr>(i, "rtx.state");
    if (key) {
      auto it = argOfState.find(key.getValue().str());
      if (it == argOfState.end())
        throw Error("result " + std::to_string(i) + " carries state '" +
                    key.getValue().str() + "' that no argument receives");
      feedsArg[i] = it->second;
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(function.getResultTypes()[i]);
    if (lossIndex < 0 && type && type.getRank() == 0 &&
        isa<FloatType>(type.getElementType()))
      lossIndex = i;
  }

  ExecutionResult result;
  for (const InputSlot &slot : slots) {
    Shape local = shapeOf(slot.type);
    Shape global = getLocalBlock(slot.sharding, local, mesh, 0).globalShape;
    rtxrt::DType dtype =
        toDType(cast<RankedTensorType>(slot.type).getElementType());
    Tensor value;
    std::string source;
    if (auto it = given.find(slot.name); it != given.end()) {
      value = it->second;
      source = "the given inputs";
    } else if (!options.inputsDir.empty() &&
               fileExists(options.inputsDir + "/" + slot.name + ".npy")) {
      source = options.inputsDir + "/" + slot.name + ".npy";
      value = rtxrt::readNpy(source);
    } else if (options.randomInputs) {
      value = rtxrt::randomInput(slot.name, options.seed, global, dtype,
                                 getIntegerDataBound(slot.value));
      source = "random";
    } else {
      throw Error("missing input '" + slot.name + "': expected " +
                  (options.inputsDir.empty() ? std::string("--inputs DIR")
                                             : options.inputsDir) +
                  "/" + slot.name + ".npy of shape " +
                  rtxrt::shapeToString(global) + " " + rtxrt::dtypeName(dtype) +
                  " (or pass --random)");
    }
    if (value.shape() != global)
      throw Error("input '" + slot.name + "' from " + source + " has shape " +
                  rtxrt::shapeToString(value.shape()) +
                  ", the program expects " + rtxrt::shapeToString(global));
    if (value.dtype() != dtype) {
      // .npy has no bf16: accept f32 data for 16-bit float inputs.
      bool widened =
          rtxrt::isFloat(dtype) && value.dtype() == rtxrt::DType::F32 &&
          (dtype == rtxrt::DType::BF16 || dtype == rtxrt::DType::F16);
      if (!widened)
        throw Error("input '" + slot.name + "' from " + source + " has dtype " +
                    rtxrt::dtypeName(value.dtype()) + ", the program expects " +
                    rtxrt::dtypeName(dtype));
      value = value.to(dtype);
    }
    result.inputs[slot.name] = value;
  }

  if (!options.stateDir.empty() && !options.paramsDir.empty())
    throw Error("--params and --state both give the parameters; use one");
  auto stateFile = [&](const std::string &key) {
    return rtxrt::stateFilePath(options.stateDir, key);
  };
  // Optimizer state loaded from --state, by key (global shapes).
  std::map<std::string, Tensor> loadedState;
  for (const ArgumentRole &role : roles) {
    if (role.kind != ArgumentRole::State || options.stateDir.empty())
      continue;
    std::string path = stateFile(role.stateKey);
    Tensor value = rtxrt::readNpy(path);
    loadedState[role.stateKey] = value;
  }

  // Parameter values loaded from --params, by name (global shapes).
  std::mutex paramMutex;
  std::map<std::string, Tensor> loadedParams;
  auto loadParam = [&](const ParamSpec &param, const Shape &global) -> Tensor {
    std::lock_guard<std::mutex> lock(paramMutex);
    if (auto it = options.paramValues.find(param.name);
        it != options.paramValues.end()) {
      if (it->second.shape() != global)
        throw Error("parameter '" + param.name + "' was given with shape " +
                    rtxrt::shapeToString(it->second.shape()) +
                    ", the program expects " + rtxrt::shapeToString(global));
      return it->second;
    }
    if (auto it = loadedParams.find(param.name); it != loadedParams.end())
      return it->second;
    std::string path = options.paramsDir + "/" + param.name + ".npy";
    if (!options.stateDir.empty())
      path = stateFile("param:" + param.name);
    else if (options.paramsDir.empty() || !fileExists(path))
      return Tensor();
    Tensor value = rtxrt::readNpy(path);
    if (value.shape() != global)
      throw Error("parameter '" + param.name + "' in " + path + " has shape " +
                  rtxrt::shapeToString(value.shape()) +
                  ", the program expects " + rtxrt::shapeToString(global));
    value = value.to(toDType(param.type.getElementType()));
    loadedParams[param.name] = value;
    return value;
  };
  auto paramValue = [&](const ParamSpec &param, int64_t rank) {
    Shape local = shapeOf(param.type);
    LocalBlock block = getLocalBlock(param.sharding, local, mesh, rank);
    if (Tensor loaded = loadParam(param, block.globalShape); loaded.defined())
      return sliceBlock(loaded, local, block.offsets);
    return rtxrt::initParameter(
        param.name, static_cast<rtxrt::InitKind>(param.init.getKind()),
        param.init.getA().convertToDouble(),
        param.init.getB().convertToDouble(), param.seed, local,
        toDType(param.type.getElementType()), block.globalShape, block.offsets);
  };
  auto inputBlock = [&](const InputSlot &slot, int64_t rank) {
    Shape local = shapeOf(slot.type);
    LocalBlock block = getLocalBlock(slot.sharding, local, mesh, rank);
    return sliceBlock(result.inputs.at(slot.name), local, block.offsets);
  };

  auto lossSharding = lossIndex >= 0
                          ? function.getResultAttrOfType<ShardingAttr>(
                                lossIndex, RTXDialect::getShardingAttrName())
                          : ShardingAttr();
  bool liveLoss = lossIndex >= 0 && options.onStep &&
                  (!lossSharding || lossSharding.getPartialAxes().empty());
  // Per step, per rank: the local loss (assembled after the run).
  std::vector<std::vector<double>> localLosses(
      options.steps, std::vector<double>(numRanks, 0.0));

  auto runRank = [&](int64_t rank, InProcessWorld *world) {
    RankEnvironment env;
    env.rank = rank;
    env.mesh = mesh;
    env.world = world;
    env.getParam = [&, rank](const ParamSpec &param) {
      return paramValue(param, rank);
    };
    env.getInput = [&, rank](InputOp input) {
      for (const InputSlot &slot : slots)
        if (slot.value == input.getResult())
          return inputBlock(slot, rank);
      throw Error("unknown input '" + input.getName().str() + "'");
    };
    std::vector<Tensor> args;
    for (auto [i, role] : llvm::enumerate(roles)) {
      auto type = cast<RankedTensorType>(function.getArgumentTypes()[i]);
      switch (role.kind) {
      case ArgumentRole::Input:
        args.push_back(inputBlock(slots[role.input], rank));
        break;
      case ArgumentRole::Param:
        args.push_back(paramValue(role.param, rank));
        break;
      case ArgumentRole::State: {
        Shape local = shapeOf(type);
        if (options.stateDir.empty()) {
          args.push_back(Tensor(local, toDType(type.getElementType())));
          break;
        }
        LocalBlock block = getLocalBlock(role.sharding, local, mesh, rank);
        const Tensor &global = loadedState.at(role.stateKey);
        if (global.shape() != block.globalShape)
          throw Error("optimizer state '" + role.stateKey + "' in --state " +
                      options.stateDir + " has shape " +
                      rtxrt::shapeToString(global.shape()) +
                      ", the program expects " +
                      rtxrt::shapeToString(block.globalShape));
        args.push_back(sliceBlock(global.to(toDType(type.getElementType())),
                                  local, block.offsets));
        break;
      }
      }
    }
    std::vector<Tensor> results;
    for (int64_t step = 0; step < options.steps; ++step) {
      results = interpret(function, args, env);
      if (lossIndex >= 0) {
        double loss = results[lossIndex].getAsDouble(0);
        localLosses[step][rank] = loss;
        if (liveLoss && rank == 0)
          options.onStep(step + 1, loss);
      }
      for (size_t i = 0; i < results.size(); ++i)
        if (feedsArg[i] >= 0)
          args[feedsArg[i]] = results[i];
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
    for (int64_t rank = 0; rank < numRanks; ++rank)
      threads.emplace_back([&, rank] {
        try {
          rankResults[rank] = runRank(rank, &world);
          world.finish(rank);
        } catch (const std::exception &error) {
          errors[rank] = error.what();
          world.abort(rank, error.what());
        }
      });
    for (std::thread &thread : threads)
      thread.join();
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
      if (options.onStep && !liveLoss)
        options.onStep(step + 1, loss);
    }
  }

  // Reassemble every result to its global shape. Replicas of a block must
  // agree: a rank that disagrees holds a partial sum or a wrong value that
  // the sharding does not declare, a partitioning bug worth reporting.
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto sharding = function.getResultAttrOfType<ShardingAttr>(
        i, RTXDialect::getShardingAttrName());
    Shape local = shapeOf(function.getResultTypes()[i]);
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
