//===- RedisConnection.cpp - one connection to Redis, with timeouts -------===//

#include "RedisConnection.h"

#include "rtxrt/core/Tensor.h"

#include <hiredis.h>

#include <cerrno>
#include <cstring>
#include <memory>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {
timeval toTimeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

} // namespace

std::string rtxrt::detail::seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", ms.count() / 1000.0);
  return text;
}

struct RedisConnection::Reply {
  std::unique_ptr<redisReply, void (*)(void *)> reply{nullptr, freeReplyObject};
  redisReply *operator->() const { return reply.get(); }
};

RedisConnection::RedisConnection(const std::string &spec,
                                 const std::string &host, int port,
                                 std::chrono::milliseconds timeout)
    : spec_(spec), host_(host), port_(port), timeout_(timeout) {
  connect();
}

void RedisConnection::connect() {
  redis_ = redisConnectWithTimeout(host_.c_str(), port_, toTimeval(timeout_));
  if (!redis_ || redis_->err) {
    std::string why = redis_ ? redis_->errstr : "out of memory";
    if (redis_)
      redisFree(redis_);
    redis_ = nullptr;
    throw Error("cannot reach the rendezvous store " + spec_ + ": " + why);
  }
  if (redisSetTimeout(redis_, toTimeval(timeout_)) != REDIS_OK) {
    redisFree(redis_);
    redis_ = nullptr;
    throw Error("cannot set a timeout on the rendezvous store " + spec_);
  }
}

RedisConnection::~RedisConnection() {
  if (redis_)
    redisFree(redis_);
}

RedisConnection::Reply
RedisConnection::command(const std::vector<std::string> &args) {
  if (!redis_)
    // It failed earlier (hiredis closes a context after an I/O error or a
    // timeout): connect again, as a restarted server may be back.
    connect();
  std::vector<const char *> argv;
  std::vector<size_t> lengths;
  for (const std::string &a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  Reply result;
  result.reply.reset(static_cast<redisReply *>(redisCommandArgv(
      redis_, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (!result.reply) {
    // hiredis leaves a context unusable after an I/O error or a timeout.
    bool timedOut =
        redis_->err == REDIS_ERR_IO &&
        (errno == EAGAIN || errno == EWOULDBLOCK ||
         std::strstr(redis_->errstr, "temporarily unavailable") != nullptr);
    std::string why = timedOut
                          ? "did not answer within " + seconds(timeout_) + " s"
                          : std::string("failed: ") + redis_->errstr;
    redisFree(redis_);
    redis_ = nullptr;
    throw Error("the rendezvous store " + spec_ + " " + why + " (" + args[0] +
                " " + (args.size() > 1 ? args[1] : "") + ")");
  }
  if (result->type == REDIS_REPLY_ERROR)
    throw Error("the rendezvous store " + spec_ + " refused " + args[0] + ": " +
                std::string(result->str, result->len));
  return result;
}

bool RedisConnection::exists(const std::string &key) {
  Reply reply = command({"EXISTS", key});
  return reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
}

void RedisConnection::put(const std::string &key, const std::string &value) {
  command({"SET", key, value});
}

bool RedisConnection::add(const std::string &key, const std::string &value) {
  Reply reply = command({"SETNX", key, value});
  return reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
}

std::optional<std::string> RedisConnection::find(const std::string &key) {
  Reply reply = command({"GET", key});
  if (reply->type != REDIS_REPLY_STRING)
    return std::nullopt;
  return std::string(reply->str, reply->len);
}
