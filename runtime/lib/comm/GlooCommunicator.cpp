//===- GlooCommunicator.cpp - process groups over Gloo --------------------===//
//
// One Gloo context per group, connected through a FileStore or a RedisStore
// (keys prefixed by the rendezvous' run id and the group), with a prefix
// naming the group, created eagerly in the order the program lists its
// groups (the same on every rank). An exchange is a Gloo all-gather of the
// raw bytes; collectives are computed from it (rtxrt/comm/Collectives.h), so
// every rank combines in the same order. Errors and timeouts name the rank,
// the op and the group.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/comm/Communicator.h"

#include "BindAddress.h"
#include "Liveness.h"
#include "Store.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <sys/stat.h>

using namespace rtxrt;

namespace {
using detail::groupName;

class GlooCommunicator : public Communicator {
public:
  GlooCommunicator(int64_t rank, const Rendezvous &rendezvous,
                   const std::vector<std::vector<int64_t>> &groups,
                   double timeoutSeconds)
      : rank_(rank), timeout_(std::chrono::milliseconds(
                         static_cast<int64_t>(timeoutSeconds * 1000))) {
    detail::RunStore opened = detail::openRunStore(rendezvous, timeoutSeconds);
    store_ = std::move(opened.store);
    runStore_ = std::move(opened.run);
    gloo::transport::tcp::attr attr;
    // An address the other ranks reach: loopback only on one node.
    attr.hostname = detail::bindAddress();
    device_ = gloo::transport::tcp::CreateDevice(attr);
    auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
    for (const auto &group : groups) {
      std::string name = groupName(group);
      if (group.size() < 2 || contexts_.count(name))
        continue;
      int64_t index = 0;
      while (group[index] != rank)
        ++index;
      gloo::rendezvous::PrefixStore prefixed("group" + name, *runStore_);
      auto context = std::make_shared<gloo::rendezvous::Context>(
          static_cast<int>(index), static_cast<int>(group.size()));
      context->setTimeout(timeout);
      try {
        context->connectFullMesh(prefixed, device_);
      } catch (const std::exception &error) {
        throw Error("rank " + std::to_string(rank) +
                    " could not connect process group " + name + ": " +
                    error.what() + detail::livenessReport());
      }
      contexts_[name] = context;
    }
  }

  void setTimeout(double seconds) override {
    timeout_ = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    // Gloo's collectives take their context's timeout when they start.
    for (auto &[name, context] : contexts_)
      context->setTimeout(timeout_);
  }

  std::vector<Tensor> exchange(const std::vector<int64_t> &group,
                               const Tensor &input,
                               const std::string &what) override {
    if (group.size() == 1)
      return {input};
    Tensor all = gather(group, input, what);
    size_t bytes = input.nbytes();
    std::vector<Tensor> pieces;
    for (size_t i = 0; i < group.size(); ++i) {
      Tensor t = Tensor::uninitialized(input.shape(), input.dtype());
      std::memcpy(t.raw(),
                  static_cast<const unsigned char *>(all.raw()) + i * bytes,
                  bytes);
      pieces.push_back(t);
    }
    return pieces;
  }

  Tensor gather(const std::vector<int64_t> &group, const Tensor &input,
                const std::string &what) override {
    std::string name = groupName(group);
    auto &groupContext = context(group, what);
    Shape shape = input.shape();
    shape.insert(shape.begin(), static_cast<int64_t>(group.size()));
    Tensor all = Tensor::uninitialized(shape, input.dtype());
    try {
      gloo::AllgatherOptions options(groupContext);
      options.setInput(const_cast<unsigned char *>(
                           static_cast<const unsigned char *>(input.raw())),
                       input.nbytes());
      options.setOutput(static_cast<unsigned char *>(all.raw()), all.nbytes());
      gloo::allgather(options);
    } catch (const std::exception &error) {
      throw CommunicationError(
          "rank " + std::to_string(rank_) + ": " + what + " in process group " +
          name + " failed: " + error.what() + detail::livenessReport());
    }
    return all;
  }

  const char *algorithm(const Collective &c, DType dtype) const override {
    bool sum = (c.reduce == ReduceKind::Sum || c.reduce == ReduceKind::Mean) &&
               dtype == DType::F32;
    if (c.kind == Collective::Kind::AllReduce && sum)
      return "gloo ring all-reduce";
    // Communicator::reduceScatter and allGather, along a dimension whose
    // pieces are contiguous (a flat buffer's); others exchange.
    if (c.kind == Collective::Kind::ReduceScatter && sum && c.dim == 0)
      return "gloo ring all-reduce, then this rank's piece";
    if (c.kind == Collective::Kind::AllGather && c.dim == 0)
      return "gloo all-gather";
    return "gloo all-gather, then combined on the host";
  }

  // Gloo's ring all-reduce: each rank sends 2(n-1)/n of the data instead
  // of the (n-1) copies an exchange moves.
  Tensor sum(const std::vector<int64_t> &group, const Tensor &input,
             const std::string &what) override {
    if (group.size() == 1 || input.dtype() != DType::F32 || input.numel() == 0)
      return Tensor();
    std::string name = groupName(group);
    auto it = contexts_.find(name);
    if (it == contexts_.end())
      return Tensor();
    Tensor out = input.clone();
    try {
      gloo::AllreduceOptions options(it->second);
      options.setOutput(out.data<float>(), out.numel());
      options.setReduceFunction(
          static_cast<void (*)(void *, const void *, const void *, size_t)>(
              &gloo::sum<float>));
      gloo::allreduce(options);
    } catch (const std::exception &error) {
      throw CommunicationError(
          "rank " + std::to_string(rank_) + ": " + what + " in process group " +
          name + " failed: " + error.what() + detail::livenessReport());
    }
    return out;
  }

  // Point to point over Gloo's unbound buffers, in the group's context
  // (peer = group rank). Slots carry rtx's tag under a prefix that Gloo's
  // own collectives (prefixes 1 to 8) never use. The message lives in the
  // completion until Gloo has sent it, so a send never waits for its
  // receive.
  Completion send(const std::vector<int64_t> &group, int64_t, int64_t peer,
                  int64_t tag, const Tensor &input,
                  const std::string &what) override {
    return post(/*sending=*/true, group, peer, tag, input.clone(), what);
  }

  Completion recv(const std::vector<int64_t> &group, int64_t, int64_t peer,
                  int64_t tag, const Shape &shape, DType dtype,
                  const std::string &what) override {
    return post(/*sending=*/false, group, peer, tag,
                Tensor::uninitialized(shape, dtype), what);
  }

private:
  struct Message {
    Tensor tensor;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  };

  std::shared_ptr<gloo::rendezvous::Context> &
  context(const std::vector<int64_t> &group, const std::string &what) {
    std::string name = groupName(group);
    auto it = contexts_.find(name);
    if (it == contexts_.end())
      throw Error("rank " + std::to_string(rank_) + ": " + what +
                  " uses process group " + name + ", which was not created");
    return it->second;
  }

  /// Posts the send or receive of `tensor` (the message's own buffer); the
  /// completion waits for it and yields the received tensor.
  Completion post(bool sending, const std::vector<int64_t> &group, int64_t peer,
                  int64_t tag, Tensor tensor, const std::string &what) {
    auto message = std::make_shared<Message>();
    message->tensor = std::move(tensor);
    message->buffer = context(group, what)
                          ->createUnboundBuffer(message->tensor.raw(),
                                                message->tensor.nbytes());
    if (sending)
      message->buffer->send(static_cast<int>(peer), slot(tag, what));
    else
      message->buffer->recv(static_cast<int>(peer), slot(tag, what));
    return std::async(std::launch::deferred,
                      [this, message, sending, group, peer, what] {
                        waitMessage(*message, sending, group, peer, what);
                        return sending ? Tensor() : message->tensor;
                      })
        .share();
  }

  uint64_t slot(int64_t tag, const std::string &what) const {
    if (tag < 0 || tag > 0xffffffffll)
      throw Error("rank " + std::to_string(rank_) + ": " + what + ": tag " +
                  std::to_string(tag) + " is outside [0, 2^32)");
    constexpr uint8_t kPointToPointSlotPrefix = 0x40;
    return gloo::Slot::build(kPointToPointSlotPrefix,
                             static_cast<uint32_t>(tag));
  }

  void waitMessage(Message &message, bool sending,
                   const std::vector<int64_t> &group, int64_t peer,
                   const std::string &what) {
    bool done = false;
    std::string failure;
    try {
      done = sending ? message.buffer->waitSend(timeout_)
                     : message.buffer->waitRecv(timeout_);
    } catch (const std::exception &error) {
      failure = error.what();
    }
    if (!done)
      throw CommunicationError(
          "rank " + std::to_string(rank_) + ": " + what +
          (sending ? " to group rank " : " from group rank ") +
          std::to_string(peer) + " (rank " + std::to_string(group.at(peer)) +
          ") in process group " + groupName(group) +
          (failure.empty() ? " timed out after " +
                                 std::to_string(timeout_.count() / 1000.0) +
                                 " s (the peer never " +
                                 (sending ? "received" : "sent") + " it)"
                           : " failed: " + failure));
  }

  int64_t rank_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::unique_ptr<gloo::rendezvous::PrefixStore> runStore_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::map<std::string, std::shared_ptr<gloo::rendezvous::Context>> contexts_;
};
} // namespace

std::unique_ptr<Communicator>
rtxrt::makeGlooCommunicator(int64_t rank, int64_t, const Rendezvous &rendezvous,
                            const std::vector<std::vector<int64_t>> &groups,
                            double timeoutSeconds) {
  return std::make_unique<GlooCommunicator>(rank, rendezvous, groups,
                                            timeoutSeconds);
}
