//===- Arguments.cpp - where a training step's arguments come from --------===//

#include "rtxrt/program/Arguments.h"
#include "rtxrt/checkpoint/Checkpoint.h"

#include "rtxrt/core/Npy.h"
#include "rtxrt/core/Random.h"
#include "rtxrt/kernels/Kernels.h"
#include "rtxrt/offload/OffloadStore.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

using namespace rtxrt;

static bool fileExists(const std::string &path) {
  return std::ifstream(path).good();
}

/// Throws unless `dir` is a directory: a mistyped --params or --inputs must
/// not quietly mean "no files" (every value would be drawn instead).
static void checkDirectory(const std::string &flag, const std::string &dir) {
  struct stat info;
  if (stat(dir.c_str(), &info) != 0)
    throw Error(flag + " " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    throw Error(flag + " " + dir + " is not a directory (it takes DIR with " +
                "NAME.npy files)");
}


ArgumentLoader::ArgumentLoader(const MeshLayout &mesh, ArgumentSources sources)
    : mesh_(mesh), sources_(std::move(sources)) {
  if (!sources_.stateDir.empty() && !sources_.paramsDir.empty())
    throw Error("--params and --state both give the parameters; use one");
  if (sources_.checkpoint &&
      (!sources_.stateDir.empty() || !sources_.paramsDir.empty()))
    throw Error("--resume gives the parameters from a checkpoint; it "
                "excludes --params and --state");
  if (!sources_.stateDir.empty())
    sources_.stateDir = committedStateDir(sources_.stateDir, /*say=*/true);
  if (sources_.paramsPartial && sources_.paramsDir.empty())
    throw Error("--params-partial needs --params DIR");
  if (!sources_.paramsDir.empty())
    checkDirectory("--params", sources_.paramsDir);
  if (!sources_.inputsDir.empty())
    checkDirectory("--inputs", sources_.inputsDir);
}

Shape ArgumentLoader::globalShape(const ArgSpec &arg) const {
  return localBlock(arg.sharding, arg.shape, mesh_, 0).globalShape;
}

Tensor ArgumentLoader::read(const std::string &path) {
  if (!sources_.keepGlobals)
    return readNpy(path);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = globals_.find(path);
  if (it == globals_.end())
    it = globals_.emplace(path, readNpy(path)).first;
  return it->second;
}

Tensor ArgumentLoader::fromFile(const ArgSpec &arg, const std::string &what,
                                const std::string &path, int64_t rank) {
  Tensor value = read(path);
  Shape global = globalShape(arg);
  if (value.shape() != global)
    throw Error(what + " '" + arg.name + "' in " + path + " has shape " +
                shapeToString(value.shape()) + ", the program expects " +
                shapeToString(global));
  if (isFloat(value.dtype()))
    for (int64_t i = 0; i < value.numel(); ++i)
      if (std::isnan(value.getAsDouble(i)))
        throw Error(what + " '" + arg.name + "' in " + path +
                    " holds NaN (element " + std::to_string(i) +
                    "): training from it gives loss=nan");
  if (value.dtype() == arg.dtype)
    return value;
  std::lock_guard<std::mutex> lock(mutex_);
  if (rank == 0 && convertedArgs_.insert(arg.name).second)
    std::fprintf(stderr, "note: %s '%s' in %s is %s; converted to %s\n",
                 what.c_str(), arg.name.c_str(), path.c_str(),
                 dtypeName(value.dtype()), dtypeName(arg.dtype));
  return value.to(arg.dtype);
}

Tensor ArgumentLoader::globalParam(const ArgSpec &arg, int64_t rank) {
  Shape global = globalShape(arg);
  if (auto it = givenParams_.find(arg.name); it != givenParams_.end()) {
    if (it->second.shape() != global)
      throw Error("parameter '" + arg.name + "' was given with shape " +
                  shapeToString(it->second.shape()) + ", the program expects " +
                  shapeToString(global));
    return it->second.to(arg.dtype);
  }
  std::string path = sources_.paramsDir + "/" + arg.name + ".npy";
  if (!sources_.stateDir.empty()) {
    path = stateFilePath(sources_.stateDir, stateKeyOf(arg));
  } else if (sources_.paramsDir.empty()) {
    return Tensor(); // its initializer
  } else if (!fileExists(path)) {
    if (!sources_.paramsPartial)
      throw Error("--params " + sources_.paramsDir + " lacks parameter '" +
                  arg.name + "' (expected " + path + " of shape " +
                  shapeToString(global) +
                  "); pass --params-partial to draw the missing ones from "
                  "their initializers");
    std::lock_guard<std::mutex> lock(mutex_);
    if (drawnParams_.insert(arg.name).second)
      std::fprintf(stderr,
                   "note: --params-partial: parameter '%s' is not in %s; "
                   "drawn from its initializer\n",
                   arg.name.c_str(), sources_.paramsDir.c_str());
    return Tensor(); // its initializer
  }
  return fromFile(arg, "parameter", path, rank);
}

Tensor ArgumentLoader::globalState(const ArgSpec &arg, int64_t rank) {
  std::string path = stateFilePath(sources_.stateDir, stateKeyOf(arg));
  return fromFile(arg, "optimizer state", path, rank);
}

Tensor ArgumentLoader::checkpointBlock(const ArgSpec &arg,
                                       const LocalBlock &block) const {
  const checkpoint::CheckpointReader &reader = *sources_.checkpoint;
  std::string key = stateKeyOf(arg);
  const checkpoint::TensorInfo *info = reader.manifest().find(key);
  if (!info)
    throw Error(
        "--resume: checkpoint " + reader.directory() + " holds no '" + key +
        "' (" +
        (arg.kind == ArgSpec::Param ? "parameter " : "optimizer state ") +
        arg.name + "): it was saved by another model or optimizer");
  if (info->shape != block.globalShape || info->dtype != arg.dtype)
    throw Error("--resume: checkpoint " + reader.directory() + " holds '" +
                key + "' as " + dtypeName(info->dtype) +
                shapeToString(info->shape) + ", the program expects " +
                dtypeName(arg.dtype) + shapeToString(block.globalShape));
  return reader.read(key, block.offsets, arg.shape);
}

Tensor ArgumentLoader::globalInput(const ArgSpec &arg) {
  std::string key = "input:" + arg.name;
  if (sources_.keepGlobals) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = globals_.find(key); it != globals_.end())
      return it->second;
  }
  Shape global = globalShape(arg);
  std::string path = sources_.inputsDir + "/" + arg.name + ".npy";
  Tensor value;
  std::string source;
  if (auto it = givenInputs_.find(arg.name); it != givenInputs_.end()) {
    value = it->second;
    source = "the given inputs";
  } else if (!sources_.inputsDir.empty() && fileExists(path)) {
    value = readNpy(path);
    source = path;
  } else if (sources_.drawInputs) {
    value = randomInput(arg.name, sources_.seed, global, arg.dtype, arg.bound);
    source = "random";
  } else {
    throw Error("missing input '" + arg.name + "': expected " +
                (sources_.inputsDir.empty()
                     ? "--inputs DIR/" + arg.name + ".npy"
                     : path) +
                " of shape " + shapeToString(global) + " " +
                dtypeName(arg.dtype) + sources_.drawHint);
  }
  if (value.shape() != global)
    throw Error("input '" + arg.name + "' from " + source + " has shape " +
                shapeToString(value.shape()) + ", the program expects " +
                shapeToString(global));
  if (value.dtype() != arg.dtype) {
    // .npy has no bf16: accept f32 data for 16-bit float inputs.
    bool widened = value.dtype() == DType::F32 &&
                   (arg.dtype == DType::BF16 || arg.dtype == DType::F16);
    if (!widened)
      throw Error("input '" + arg.name + "' from " + source + " has dtype " +
                  dtypeName(value.dtype()) + ", the program expects " +
                  dtypeName(arg.dtype));
    value = value.to(arg.dtype);
  }
  if (sources_.keepGlobals) {
    std::lock_guard<std::mutex> lock(mutex_);
    globals_.emplace(key, value);
  }
  return value;
}

Tensor ArgumentLoader::block(const ArgSpec &arg, int64_t rank) {
  if (!arg.flat.empty()) {
    std::vector<Tensor> blocks;
    for (const ArgSpec &member : arg.members)
      blocks.push_back(block(member, rank));
    return packFlatShard(arg.flat, blocks, mesh_, rank, arg.dtype);
  }
  LocalBlock block = localBlock(arg.sharding, arg.shape, mesh_, rank);
  if (sources_.checkpoint && arg.kind != ArgSpec::Input)
    return checkpointBlock(arg, block);
  switch (arg.kind) {
  case ArgSpec::Param:
    if (Tensor global = globalParam(arg, rank); global.defined())
      return sliceBlock(global, arg.shape, block.offsets);
    return initParameter(arg.name, arg.init, arg.a, arg.b, arg.seed, arg.shape,
                         arg.dtype, block.globalShape, block.offsets);
  case ArgSpec::State:
    if (sources_.stateDir.empty())
      return Tensor(arg.shape, arg.dtype);
    return sliceBlock(globalState(arg, rank), arg.shape, block.offsets);
  case ArgSpec::Input:
    return sliceBlock(globalInput(arg), arg.shape, block.offsets);
  }
  throw Error("unknown kind of argument '" + arg.name + "'");
}

Tensor rtxrt::loadOrOffload(ArgumentLoader &loader, OffloadStore *store,
                            const ArgSpec &arg, int64_t rank) {
  Tensor block = loader.block(arg, rank);
  if (arg.offload.empty())
    return block;
  if (!store)
    throw Error("argument '" + arg.name + "' is offloaded to '" + arg.offload +
                "', but the run has no offload store");
  store->put(stateKeyOf(arg), block);
  return Tensor();
}
