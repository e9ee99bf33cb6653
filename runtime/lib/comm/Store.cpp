//===- Store.cpp - rendezvous stores for the process groups ---------------===//

#include "Store.h"

#include "rtxrt/core/Tensor.h"

#include "RedisStore.h"

#include <gloo/rendezvous/file_store.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;

namespace {

/// Creates the directory of the store `spec` (file:PATH) if needed and
/// checks that files can be created in it, so that a path that cannot hold
/// a store (under /proc, read-only, not a directory) is an error naming it,
/// not an assertion inside Gloo's FileStore.
void checkStoreDirectory(const std::string &spec, const std::string &path) {
  if (path.empty())
    throw Error("store '" + spec + "' needs a directory: file:DIR");
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    throw Error("store '" + spec + "': cannot create the directory " + path +
                ": " + std::strerror(errno));
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw Error("store '" + spec + "': " + path + " is not a directory");
  // Every rank probes under its own name: a file created and removed.
  std::string probe =
      path + "/.rtx-store-probe-" + std::to_string(static_cast<long>(getpid()));
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("store '" + spec + "': cannot create files in " + path + ": " +
                std::strerror(errno));
  close(fd);
  unlink(probe.c_str());
}

} // namespace

detail::RunStore detail::openRunStore(const Rendezvous &rendezvous,
                                      double timeoutSeconds) {
  const std::string &spec = rendezvous.store;
  RunStore result;
  if (spec.rfind("file:", 0) == 0) {
    std::string path = spec.substr(5);
    checkStoreDirectory(spec, path);
    result.store = std::make_unique<gloo::rendezvous::FileStore>(path);
  } else if (spec.rfind("redis://", 0) == 0) {
    std::string address = spec.substr(8);
    auto colon = address.rfind(':');
    if (colon == std::string::npos)
      throw Error("store '" + spec + "' needs a port: redis://HOST:PORT");
    int port = 0;
    try {
      port = std::stoi(address.substr(colon + 1));
    } catch (const std::exception &) {
      throw Error("store '" + spec + "' needs a port: redis://HOST:PORT");
    }
    // rtx's RedisStore, not Gloo's: connecting and every command time out.
    result.store = std::make_unique<RedisStore>(
        spec, address.substr(0, colon), port,
        std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
  } else {
    throw Error("store '" + spec +
                "' is not supported: use file:DIR or redis://HOST:PORT");
  }
  result.run = std::make_unique<gloo::rendezvous::PrefixStore>(
      "run:" + rendezvous.run, *result.store);
  return result;
}

std::string detail::groupName(const std::vector<int64_t> &group) {
  std::string name = "[";
  for (size_t i = 0; i < group.size(); ++i)
    name += (i ? "," : "") + std::to_string(group[i]);
  return name + "]";
}
