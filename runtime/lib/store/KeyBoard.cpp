//===- KeyBoard.cpp - small named values beside the rendezvous store ------===//

#include "KeyBoard.h"

#include "RedisConnection.h"

#include "rtxrt/core/Tensor.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

class FileBoard : public KeyBoard {
public:
  FileBoard(const std::string &dir, const std::vector<std::string> &space)
      : dir_(dir) {
    mkdir(dir_.c_str(), 0755); // before the rendezvous creates it
    for (const std::string &part : space) {
      dir_ += "/" + part;
      mkdir(dir_.c_str(), 0755);
    }
  }
  bool put(const std::string &name, const std::string &value) override {
    std::string path = dir_ + "/" + name;
    std::string partial = path + ".partial";
    {
      std::ofstream out(partial, std::ios::trunc);
      out << value;
      if (!out.flush())
        return false;
    }
    return std::rename(partial.c_str(), path.c_str()) == 0;
  }
  bool putIfAbsent(const std::string &name, const std::string &value) override {
    // Written whole under a name of this writer's own, then hard-linked to
    // `name`: link() fails with EEXIST when another writer was first, and
    // a reader never sees half a value.
    std::string path = dir_ + "/" + name;
    static std::atomic<int64_t> counter{0};
    std::string aside = path + ".aside-" + std::to_string(getpid()) + "-" +
                        std::to_string(counter++);
    {
      std::ofstream out(aside, std::ios::trunc);
      out << value;
      if (!out.flush()) {
        std::remove(aside.c_str());
        throw Error("cannot write " + aside);
      }
    }
    int linked = link(aside.c_str(), path.c_str());
    int error = errno;
    std::remove(aside.c_str());
    if (linked == 0)
      return true;
    if (error == EEXIST)
      return false;
    throw Error("cannot create " + path + ": " + std::strerror(error));
  }
  std::optional<std::string> get(const std::string &name) override {
    std::ifstream in(dir_ + "/" + name);
    if (!in)
      return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

private:
  std::string dir_;
};

class RedisBoard : public KeyBoard {
public:
  RedisBoard(const std::string &spec, const std::vector<std::string> &space,
             std::chrono::milliseconds timeout) {
    std::string address = spec.substr(8);
    auto colon = address.rfind(':');
    store_ = std::make_unique<RedisConnection>(
        spec, address.substr(0, colon),
        std::atoi(address.substr(colon + 1).c_str()), timeout);
    for (const std::string &part : space)
      prefix_ += part + ":";
  }
  bool put(const std::string &name, const std::string &value) override {
    store_->put(prefix_ + name, value);
    return true;
  }
  bool putIfAbsent(const std::string &name, const std::string &value) override {
    return store_->add(prefix_ + name, value);
  }
  std::optional<std::string> get(const std::string &name) override {
    return store_->find(prefix_ + name);
  }

private:
  std::string prefix_;
  std::unique_ptr<RedisConnection> store_;
};

} // namespace

std::unique_ptr<KeyBoard>
rtxrt::detail::openKeyBoard(const std::string &store,
                            const std::vector<std::string> &space,
                            std::chrono::milliseconds timeout) {
  if (store.rfind("file:", 0) == 0)
    return std::make_unique<FileBoard>(store.substr(5), space);
  if (store.rfind("redis://", 0) == 0)
    return std::make_unique<RedisBoard>(store, space, timeout);
  return nullptr;
}
