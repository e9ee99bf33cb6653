//===- RedisConnection.h - one connection to Redis, with timeouts -*- C++ -*-=//
//
// Private to librtxrt. The commands rtx's stores and boards need (SET,
// SETNX, GET, EXISTS) over hiredis, each bounded by a timeout, with errors
// that name the store. A connection that failed is opened again at the next
// command (a restarted server may be back). Gloo's rendezvous store
// (comm/RedisStore.h) and the key boards (KeyBoard.h) both use it; it
// depends on hiredis only, so that rtx-launch links no Gloo.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_STORE_REDISCONNECTION_H
#define RTXRT_LIB_STORE_REDISCONNECTION_H

#include <chrono>
#include <optional>
#include <string>
#include <vector>

struct redisContext;

namespace rtxrt::detail {

class RedisConnection {
public:
  /// Connects to HOST:PORT within `timeout`; throws rtxrt::Error naming
  /// `spec` when it cannot.
  RedisConnection(const std::string &spec, const std::string &host, int port,
                  std::chrono::milliseconds timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection &) = delete;
  RedisConnection &operator=(const RedisConnection &) = delete;

  /// Sets `key`, replacing any value (heartbeats, comm/Liveness.h).
  void put(const std::string &key, const std::string &value);
  /// Sets `key` only when it is not set (SETNX, atomic in the server);
  /// returns whether this call set it.
  bool add(const std::string &key, const std::string &value);
  /// The value of `key`, or none when it is not set.
  std::optional<std::string> find(const std::string &key);
  bool exists(const std::string &key);

  const std::string &spec() const { return spec_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

private:
  /// Runs one command; throws naming the store and the command when the
  /// server does not answer within the timeout or answers with an error.
  struct Reply;
  Reply command(const std::vector<std::string> &args);
  /// Opens the connection; throws naming the store when it cannot.
  void connect();

  std::string spec_, host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_;
  redisContext *redis_ = nullptr;
};

/// "2.5": `ms` in seconds, for messages.
std::string seconds(std::chrono::milliseconds ms);

} // namespace rtxrt::detail

#endif // RTXRT_LIB_STORE_REDISCONNECTION_H
