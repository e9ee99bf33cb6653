//===- ParamFiles.cpp - the files --params reads parameters from ----------===//

#include "ParamFiles.h"

#include "rtxrt/core/Block.h"
#include "rtxrt/core/Npy.h"
#include "rtxrt/core/Safetensors.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sys/stat.h>

using namespace rtxrt;

namespace {

/// DIR/NAME.npy, each read whole (a .npy file has no index of blocks worth
/// the trouble: rtx writes them per run, not per model release).
class NpyDirectory : public ParamFiles {
public:
  NpyDirectory(std::string dir, bool keepGlobals)
      : dir_(std::move(dir)), keepGlobals_(keepGlobals) {}

  std::optional<TensorHeader> find(const std::string &name) override {
    std::string path = file(name);
    if (!std::ifstream(path).good())
      return std::nullopt;
    NpyInfo info = readNpyInfo(path);
    return TensorHeader{info.dtype, info.shape};
  }

  Tensor readBlock(const std::string &name, const std::vector<int64_t> &offsets,
                   const Shape &shape) override {
    return sliceBlock(read(file(name)), shape, offsets);
  }

  std::string file(const std::string &name) const override {
    return dir_ + "/" + name + ".npy";
  }
  std::string expected(const std::string &name) const override {
    return file(name);
  }

private:
  Tensor read(const std::string &path) {
    if (!keepGlobals_)
      return readNpy(path);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = globals_.find(path);
    if (it == globals_.end())
      it = globals_.emplace(path, readNpy(path)).first;
    return it->second;
  }

  std::string dir_;
  bool keepGlobals_;
  std::mutex mutex_;
  std::map<std::string, Tensor> globals_;
};

/// A safetensors file or a directory of shards: each rank reads its block.
class SafetensorsFiles : public ParamFiles {
public:
  explicit SafetensorsFiles(const std::string &path) : set_(path) {}

  std::optional<TensorHeader> find(const std::string &name) override {
    const SafetensorsFile *file = set_.fileOf(name);
    if (!file)
      return std::nullopt;
    const SafetensorsEntry &entry = *file->find(name);
    return TensorHeader{file->dtypeOf(entry.dtype, "tensor '" + name + "'"),
                        entry.shape};
  }

  Tensor readBlock(const std::string &name, const std::vector<int64_t> &offsets,
                   const Shape &shape) override {
    return set_.fileOf(name)->readBlock(name, offsets, shape);
  }

  std::string file(const std::string &name) const override {
    const SafetensorsFile *file = set_.fileOf(name);
    return file ? file->path() : set_.path();
  }
  std::string expected(const std::string &name) const override {
    return "tensor '" + name + "' in " + file(name);
  }

private:
  SafetensorsSet set_;
};

} // namespace

std::unique_ptr<ParamFiles> ParamFiles::open(const std::string &path,
                                             bool keepGlobals) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    throw Error("--params " + path + ": " + std::strerror(errno));
  try {
    if (SafetensorsSet::holdsSafetensors(path))
      return std::make_unique<SafetensorsFiles>(path);
  } catch (const Error &e) {
    throw Error(std::string("--params: ") + e.what());
  }
  if (!S_ISDIR(info.st_mode))
    throw Error("--params " + path +
                " is neither a safetensors file nor a "
                "directory");
  return std::make_unique<NpyDirectory>(path, keepGlobals);
}
