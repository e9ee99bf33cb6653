//===- RedisStore.cpp - Gloo's rendezvous store on Redis, with timeouts ---===//

#include "RedisStore.h"

#include "rtxrt/core/Tensor.h"

#include <thread>

using namespace rtxrt;
using namespace rtxrt::detail;

void RedisStore::set(const std::string &key, const std::vector<char> &data) {
  if (!redis_.add(key, std::string(data.begin(), data.end())))
    throw Error("the rendezvous store " + redis_.spec() +
                " already holds key '" + key +
                "' (two runs with one RTX_RUN_ID?)");
}

std::vector<char> RedisStore::get(const std::string &key) {
  wait({key}, redis_.timeout());
  std::optional<std::string> value = redis_.find(key);
  if (!value)
    throw Error("the rendezvous store " + redis_.spec() + " lost key '" + key +
                "'");
  return std::vector<char>(value->begin(), value->end());
}

void RedisStore::wait(const std::vector<std::string> &keys) {
  wait(keys, redis_.timeout());
}

void RedisStore::wait(const std::vector<std::string> &keys,
                      const std::chrono::milliseconds &timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string &key : keys) {
    while (!redis_.exists(key)) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error("timed out after " + seconds(timeout) +
                    " s waiting for key '" + key +
                    "' in the rendezvous store " + redis_.spec() +
                    " (a rank that never came?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}
