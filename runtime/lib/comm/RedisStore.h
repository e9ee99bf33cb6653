//===- RedisStore.h - a Redis rendezvous store with timeouts ----*- C++ -*-===//
//
// Gloo's RedisStore connects and sends its commands without a timeout: a
// redis-server that stops answering (stopped, overloaded, a dropped network)
// hangs every rank for ever, whatever --timeout says. This store has Gloo's
// semantics (set once with SETNX, get waits for the key) on hiredis with
// redisConnectWithTimeout and redisSetTimeout, so connecting and every
// command fail after the timeout with a message naming the store. After a
// failed command the next one connects again: a server that was restarted
// (a store outage) serves the heartbeats and a later rendezvous round.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMM_REDISSTORE_H
#define RTXRT_LIB_COMM_REDISSTORE_H

#include "store/RedisConnection.h"

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

namespace rtxrt::detail {

/// Gloo's store interface over a RedisConnection (store/RedisConnection.h),
/// which also serves the heartbeats (put, find).
class RedisStore : public gloo::rendezvous::Store {
public:
  /// Connects to HOST:PORT within `timeout`; throws rtxrt::Error naming
  /// `spec` when it cannot.
  RedisStore(const std::string &spec, const std::string &host, int port,
             std::chrono::milliseconds timeout)
      : redis_(spec, host, port, timeout) {}

  /// Sets `key` once (a second set of the same key is an error, as in Gloo).
  void set(const std::string &key, const std::vector<char> &data) override;
  /// Waits for `key` (up to the timeout), then reads it.
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

  RedisConnection &connection() { return redis_; }

private:
  RedisConnection redis_;
};

} // namespace rtxrt::detail

#endif // RTXRT_LIB_COMM_REDISSTORE_H
