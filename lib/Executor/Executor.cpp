//===- Executor.cpp - run a function on one or N simulated ranks ----------===//

#include "rtx/Executor/Executor.h"

#include "Distribution.h"
#include "Interpreter.h"

#include "rtxrt/Kernels.h"
#include "rtxrt/Npy.h"
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
    throw Error("no function @" + entry.str() + " in the module (functions:" +
                names + ")");
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
    throw Error("--ranks " + std::to_string(numRanks) + " needs exactly one "
                "rtx.mesh with " + std::to_string(numRanks) +
                " ranks; the module has" + (seen.empty() ? " none" : seen));
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
} // namespace

/// Upper bound for random integer inputs: the vocabulary of the embedding or
/// the loss that reads them, else 2.
static int64_t integerInputBound(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto embedding = dyn_cast<EmbeddingOp>(user))
      if (embedding.getIds() == value)
        return cast<RankedTensorType>(embedding.getTable().getType())
            .getDimSize(0);
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      if (loss.getLabels() == value)
        return cast<RankedTensorType>(loss.getLogits().getType())
            .getShape()
            .back();
  }
  return 2;
}

static Tensor randomInput(const InputSlot &slot, const Shape &shape,
                          int64_t seed) {
  rtxrt::DType dtype = toDType(cast<RankedTensorType>(slot.type).getElementType());
  Tensor t(shape, dtype);
  uint64_t key = rtxrt::randomKey(seed, "input:" + slot.name);
  if (rtxrt::isFloat(dtype)) {
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setFromDouble(i, rtxrt::normalAt(key, i));
    return t;
  }
  int64_t bound = dtype == rtxrt::DType::I1 ? 2 : integerInputBound(slot.value);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setFromDouble(i, std::min<int64_t>(
                           bound - 1, static_cast<int64_t>(
                                          rtxrt::uniformAt(key, i) * bound)));
  return t;
}

ExecutionResult mlir::rtx::execute(ModuleOp module,
                                   const ExecutorOptions &options,
                                   const std::map<std::string, Tensor> &given) {
  func::FuncOp function = findEntry(module, options.entry);
  int64_t numRanks = options.numRanks;
  if (numRanks < 1)
    throw Error("--ranks must be at least 1");
  rtxrt::MeshLayout mesh = findMesh(module, numRanks);

  // Everything that enters the program, with its global shape.
  std::vector<InputSlot> slots;
  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments())
    slots.push_back({"arg" + std::to_string(arg.getArgNumber()), arg.getType(),
                     function.getArgAttrOfType<ShardingAttr>(
                         arg.getArgNumber(), RTXDialect::getShardingAttrName()),
                     arg});
  for (auto input : function.getOps<InputOp>())
    slots.push_back({input.getName().str(), input.getType(),
                     input->getAttrOfType<ShardingAttr>(
                         RTXDialect::getShardingAttrName()),
                     input.getResult()});

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
      value = randomInput(slot, global, options.seed);
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
      bool widened = rtxrt::isFloat(dtype) && value.dtype() == rtxrt::DType::F32 &&
                     (dtype == rtxrt::DType::BF16 || dtype == rtxrt::DType::F16);
      if (!widened)
        throw Error("input '" + slot.name + "' from " + source + " has dtype " +
                    rtxrt::dtypeName(value.dtype()) + ", the program expects " +
                    rtxrt::dtypeName(dtype));
      value = value.to(dtype);
    }
    result.inputs[slot.name] = value;
  }

  // Parameter values loaded from --params, by name (global shapes).
  std::mutex paramMutex;
  std::map<std::string, Tensor> loadedParams;
  auto loadParam = [&](ParamOp param, const Shape &global) -> Tensor {
    std::lock_guard<std::mutex> lock(paramMutex);
    std::string name = param.getName().str();
    if (auto it = loadedParams.find(name); it != loadedParams.end())
      return it->second;
    std::string path = options.paramsDir + "/" + name + ".npy";
    if (options.paramsDir.empty() || !fileExists(path))
      return Tensor();
    Tensor value = rtxrt::readNpy(path);
    if (value.shape() != global)
      throw Error("parameter '" + name + "' in " + path + " has shape " +
                  rtxrt::shapeToString(value.shape()) +
                  ", the program expects " + rtxrt::shapeToString(global));
    rtxrt::DType dtype = toDType(param.getType().getElementType());
    value = value.to(dtype);
    loadedParams[name] = value;
    return value;
  };

  auto makeEnvironment = [&](int64_t rank, InProcessWorld *world) {
    RankEnvironment env;
    env.rank = rank;
    env.mesh = mesh;
    env.world = world;
    env.getParam = [&, rank](ParamOp param) {
      Shape local = shapeOf(param.getType());
      auto sharding = param->getAttrOfType<ShardingAttr>(
          RTXDialect::getShardingAttrName());
      LocalBlock block = getLocalBlock(sharding, local, mesh, rank);
      if (Tensor loaded = loadParam(param, block.globalShape); loaded.defined())
        return sliceBlock(loaded, local, block.offsets);
      InitAttr init = param.getInit();
      return rtxrt::initParameter(
          param.getName().str(), static_cast<rtxrt::InitKind>(init.getKind()),
          init.getA().convertToDouble(), init.getB().convertToDouble(),
          param.getEffectiveSeed(), local,
          toDType(param.getType().getElementType()), block.globalShape,
          block.offsets);
    };
    env.getInput = [&, rank](InputOp input) {
      Shape local = shapeOf(input.getType());
      auto sharding = input->getAttrOfType<ShardingAttr>(
          RTXDialect::getShardingAttrName());
      LocalBlock block = getLocalBlock(sharding, local, mesh, rank);
      return sliceBlock(result.inputs.at(input.getName().str()), local,
                        block.offsets);
    };
    return env;
  };
  auto argsOf = [&](int64_t rank) {
    std::vector<Tensor> args;
    for (BlockArgument arg : body.getArguments()) {
      const InputSlot &slot = slots[arg.getArgNumber()];
      Shape local = shapeOf(slot.type);
      LocalBlock block = getLocalBlock(slot.sharding, local, mesh, rank);
      args.push_back(
          sliceBlock(result.inputs.at(slot.name), local, block.offsets));
    }
    return args;
  };

  std::vector<std::vector<Tensor>> rankResults(numRanks);
  if (numRanks == 1) {
    RankEnvironment env = makeEnvironment(0, nullptr);
    rankResults[0] = interpret(function, argsOf(0), env);
  } else {
    InProcessWorld world(numRanks, options.collectiveTimeoutSeconds);
    std::vector<std::string> errors(numRanks);
    std::vector<std::thread> threads;
    for (int64_t rank = 0; rank < numRanks; ++rank)
      threads.emplace_back([&, rank] {
        try {
          RankEnvironment env = makeEnvironment(rank, &world);
          rankResults[rank] = interpret(function, argsOf(rank), env);
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

  // Reassemble every result to its global shape.
  for (unsigned i = 0; i < function.getNumResults(); ++i) {
    auto sharding = function.getResultAttrOfType<ShardingAttr>(
        i, RTXDialect::getShardingAttrName());
    Shape local = shapeOf(function.getResultTypes()[i]);
    Tensor global(getLocalBlock(sharding, local, mesh, 0).globalShape,
                  rankResults[0][i].dtype());
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      if (!isCanonicalReplica(sharding, mesh, rank))
        continue;
      LocalBlock block = getLocalBlock(sharding, local, mesh, rank);
      accumulateBlock(global, rankResults[rank][i], block.offsets);
    }
    result.results.push_back(global);
  }
  return result;
}
