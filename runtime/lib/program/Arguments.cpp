//===- Arguments.cpp - where a training step's arguments come from --------===//

#include "rtxrt/program/Arguments.h"
#include "rtxrt/checkpoint/Checkpoint.h"

#include "ParamFiles.h"

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

/// Throws unless `dir` is a directory: a mistyped --inputs must not quietly
/// mean "no files" (every value would be drawn instead).
static void checkDirectory(const std::string &flag, const std::string &dir) {
  struct stat info;
  if (stat(dir.c_str(), &info) != 0)
    throw Error(flag + " " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    throw Error(flag + " " + dir + " is not a directory (it takes DIR with " +
                "NAME.npy files)");
}

/// Throws when `block` (at `offsets` of a tensor of `shape`) holds a NaN,
/// naming its element in that tensor: training from it gives loss=nan
/// without a word.
static void checkNoNaN(const Tensor &block, const Shape &shape,
                       const std::vector<int64_t> &offsets,
                       const std::string &what) {
  if (!isFloat(block.dtype()))
    return;
  for (int64_t i = 0; i < block.numel(); ++i) {
    if (!std::isnan(block.getAsDouble(i)))
      continue;
    int64_t element = 0, rest = i;
    std::vector<int64_t> index(shape.size());
    for (size_t d = shape.size(); d-- > 0; rest /= block.dim(d))
      index[d] = rest % block.dim(d);
    for (size_t d = 0; d < shape.size(); ++d)
      element = element * shape[d] + offsets[d] + index[d];
    throw Error(what + " holds NaN (element " + std::to_string(element) +
                "): training from it gives loss=nan");
  }
}

/// "[8, 16) of dimension 1 of 'c_attn.weight'": the part `arg` is.
static std::string partText(const ArgSpec &arg, const Shape &global) {
  const PartOf &part = arg.partOf;
  int64_t size =
      part.dim >= 0 && part.dim < int64_t(global.size()) ? global[part.dim] : 0;
  return "[" + std::to_string(part.offset) + ", " +
         std::to_string(part.offset + size) + ") of dimension " +
         std::to_string(part.dim) + " of '" + part.name + "'";
}

/// True when a tensor of `shape` holds the part `arg` (of global shape
/// `global`) is of it: the same rank, the same size along every other
/// dimension, and long enough along the part's.
static bool holdsPart(const ArgSpec &arg, const Shape &global,
                      const Shape &shape) {
  const PartOf &part = arg.partOf;
  if (shape.size() != global.size() || part.dim < 0 ||
      part.dim >= int64_t(shape.size()) || part.offset < 0)
    return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (int64_t(d) == part.dim ? part.offset + global[d] > shape[d]
                               : shape[d] != global[d])
      return false;
  return true;
}

/// A parameter's block drawn from its initializer. A part of a user's
/// tensor (with the size of its dimension known) draws the user's tensor's
/// block: the same values whether the projection was split or not.
static Tensor initialBlock(const ArgSpec &arg, const LocalBlock &block) {
  UserBlock user = userBlockOf(arg, arg.name, block.globalShape, block.offsets);
  return initParameter(user.name, arg.init, arg.a, arg.b, arg.seed, arg.shape,
                       arg.dtype, user.global, user.offsets);
}

ArgumentLoader::ArgumentLoader(const MeshLayout &mesh, ArgumentSources sources)
    : mesh_(mesh), sources_(std::move(sources)) {
  if (!sources_.stateDir.empty() && !sources_.params.empty())
    throw Error("--params and --state both give the parameters; use one");
  if (sources_.checkpoint &&
      (!sources_.stateDir.empty() || !sources_.params.empty()))
    throw Error("--resume gives the parameters from a checkpoint; it "
                "excludes --params and --state");
  if (!sources_.stateDir.empty())
    sources_.stateDir = committedStateDir(sources_.stateDir, /*say=*/true);
  if (sources_.paramsPartial && sources_.params.empty())
    throw Error("--params-partial needs --params PATH");
  if (!sources_.params.empty())
    params_ = ParamFiles::open(sources_.params, sources_.keepGlobals);
  if (!sources_.inputsDir.empty())
    checkDirectory("--inputs", sources_.inputsDir);
}

ArgumentLoader::~ArgumentLoader() = default;

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

Tensor ArgumentLoader::converted(const Tensor &value, DType dtype,
                                 const std::string &what,
                                 const std::string &name,
                                 const std::string &where, int64_t rank) {
  if (value.dtype() == dtype)
    return value;
  std::lock_guard<std::mutex> lock(mutex_);
  if (rank == 0 && convertedArgs_.insert(name).second)
    std::fprintf(stderr, "note: %s '%s' in %s is %s; converted to %s\n",
                 what.c_str(), name.c_str(), where.c_str(),
                 dtypeName(value.dtype()), dtypeName(dtype));
  return value.to(dtype);
}

Tensor ArgumentLoader::fromFile(const ArgSpec &arg, const std::string &what,
                                const std::string &path, int64_t rank) {
  Tensor value = read(path);
  Shape global = globalShape(arg);
  if (value.shape() != global)
    throw Error(what + " '" + arg.name + "' in " + path + " has shape " +
                shapeToString(value.shape()) + ", the program expects " +
                shapeToString(global));
  checkNoNaN(value, global, std::vector<int64_t>(global.size(), 0),
             what + " '" + arg.name + "' in " + path);
  return converted(value, arg.dtype, what, arg.name, path, rank);
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
  if (sources_.stateDir.empty())
    return Tensor();
  std::string path = stateFilePath(sources_.stateDir, stateKeyOf(arg));
  return fromFile(arg, "parameter", path, rank);
}

std::optional<ArgumentLoader::ParamLocation>
ArgumentLoader::locateParam(const ArgSpec &arg, const LocalBlock &block) {
  const Shape &global = block.globalShape;
  if (std::optional<TensorHeader> header = params_->find(arg.name)) {
    if (header->shape != global)
      throw Error("parameter '" + arg.name + "' in " + params_->file(arg.name) +
                  " has shape " + shapeToString(header->shape) +
                  ", the program expects " + shapeToString(global));
    return ParamLocation{arg.name, block.offsets, header->shape, header->dtype};
  }
  const PartOf &part = arg.partOf;
  if (part.name.empty())
    return std::nullopt;
  std::optional<TensorHeader> header = params_->find(part.name);
  if (!header)
    return std::nullopt;
  if (!holdsPart(arg, global, header->shape))
    throw Error("parameter '" + arg.name + "' " + shapeToString(global) +
                " is the block " + partText(arg, global) + " (rtx.part_of); " +
                params_->expected(part.name) + " has shape " +
                shapeToString(header->shape) + ", which does not hold it");
  std::vector<int64_t> offsets = block.offsets;
  offsets[part.dim] += part.offset;
  return ParamLocation{part.name, offsets, header->shape, header->dtype};
}

Tensor ArgumentLoader::readParam(const ArgSpec &arg, const ParamLocation &at,
                                 int64_t rank) {
  Tensor value = params_->readBlock(at.tensor, at.offsets, arg.shape);
  std::string file = params_->file(at.tensor);
  checkNoNaN(value, at.shape, at.offsets,
             "parameter '" + at.tensor + "' in " + file);
  return converted(value, arg.dtype, "parameter", at.tensor, file, rank);
}

Tensor ArgumentLoader::missingParam(const ArgSpec &arg,
                                    const LocalBlock &block) {
  const Shape &global = block.globalShape;
  if (!sources_.paramsPartial) {
    std::string part;
    if (!arg.partOf.name.empty())
      part = ", or " + params_->expected(arg.partOf.name) +
             " that holds it as the block " + partText(arg, global);
    throw Error("--params " + sources_.params + " lacks parameter '" +
                arg.name + "' (expected " + params_->expected(arg.name) +
                " of shape " + shapeToString(global) + part +
                "); pass --params-partial to draw the missing ones from "
                "their initializers");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (drawnParams_.insert(arg.name).second)
      std::fprintf(stderr,
                   "note: --params-partial: parameter '%s' is not in %s; "
                   "drawn from its initializer\n",
                   arg.name.c_str(), sources_.params.c_str());
  }
  return initialBlock(arg, block);
}

Tensor ArgumentLoader::paramBlock(const ArgSpec &arg, const LocalBlock &block,
                                  int64_t rank) {
  if (Tensor global = globalParam(arg, rank); global.defined())
    return sliceBlock(global, arg.shape, block.offsets);
  if (params_) {
    if (std::optional<ParamLocation> at = locateParam(arg, block))
      return readParam(arg, *at, rank);
    return missingParam(arg, block);
  }
  return initialBlock(arg, block);
}

Tensor ArgumentLoader::globalState(const ArgSpec &arg, int64_t rank) {
  std::string path = stateFilePath(sources_.stateDir, stateKeyOf(arg));
  return fromFile(arg, "optimizer state", path, rank);
}

Tensor ArgumentLoader::checkpointBlock(const ArgSpec &arg,
                                       const LocalBlock &block) const {
  const checkpoint::CheckpointReader &reader = *sources_.checkpoint;
  CheckpointPlace place =
      checkpointPlaceOf(arg, block.globalShape, block.offsets);
  const std::string &key = place.key;
  const checkpoint::TensorInfo *info = reader.manifest().find(key);
  if (!info)
    throw Error(
        "--resume: checkpoint " + reader.directory() + " holds no '" + key +
        "' (" +
        (arg.kind == ArgSpec::Param ? "parameter " : "optimizer state ") +
        arg.name + "): it was saved by another model or optimizer");
  if (info->shape != place.global || info->dtype != arg.dtype)
    throw Error("--resume: checkpoint " + reader.directory() + " holds '" +
                key + "' as " + dtypeName(info->dtype) +
                shapeToString(info->shape) + ", the program expects " +
                dtypeName(arg.dtype) + shapeToString(place.global));
  return reader.read(key, place.offsets, arg.shape);
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
    return paramBlock(arg, block, rank);
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
