//===- Store.cpp - rendezvous stores for the process groups ---------------===//

#include "Store.h"

#include "rtxrt/core/Tensor.h"

#include "RedisStore.h"

#include <gloo/rendezvous/file_store.h>

#include <cstdlib>
#include <sys/stat.h>

using namespace rtxrt;

detail::RunStore detail::openRunStore(const Rendezvous &rendezvous,
                                      double timeoutSeconds) {
  const std::string &spec = rendezvous.store;
  RunStore result;
  if (spec.rfind("file:", 0) == 0) {
    std::string path = spec.substr(5);
    mkdir(path.c_str(), 0755);
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
