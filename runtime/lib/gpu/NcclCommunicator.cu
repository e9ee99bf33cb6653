//===- NcclCommunicator.cu - GPU process groups over NCCL -----------------===//
//
// One NCCL communicator per group, created eagerly in the order the program
// lists its groups (the same on every rank, so creation never deadlocks).
// The group's first rank draws the ncclUniqueId and publishes it in the
// rendezvous store (Gloo's FileStore or RedisStore, keys prefixed by the run
// and the group); the others wait for it there.
//
// Communicators are non-blocking (NCCL 2.14+): every call returns at once
// and this file waits for completion itself, polling the stream and
// ncclCommGetAsyncError against a deadline, so a collective that a peer
// never joins fails after --timeout seconds with a CommunicationError naming
// the rank, the op and the group (the communicator is aborted first),
// instead of hanging the job. So does a peer's loss that NCCL reports itself
// (its asynchronous error: a closed connection). In-job recovery
// (program/InJobRecovery.h) catches that error and drops this communicator;
// once one of its NCCL communicators failed, the others are aborted too
// rather than destroyed (ncclCommDestroy finalizes, which waits for peers
// that may be gone). The next epoch creates new ones: its ncclUniqueIds are
// published under that epoch's run prefix, so a survivor never joins a
// communicator of the old epoch.
//
// Synchronous collectives run on the compute stream, so they are ordered
// with the kernels around them. Started ones (rtx.*_start) run on this
// communicator's own communication stream: it waits for an event recorded
// on the compute stream at the start (the input is ready), the collective
// and its reshaping kernels run there while the compute stream goes on, and
// the wait makes the compute stream wait for the event recorded after it.
// The completion holds the input and the result until then, so the
// stream-ordered allocator cannot hand their memory to the compute stream
// while the communication stream still reads or writes it; temporaries are
// freed on the communication stream (gpu::detail::StreamScope). A
// synchronous collective first waits for every started one, so the NCCL
// operations of a communicator run in the order every rank issued them.
//
// Point to point: NCCL matches a send only with a receive the peer has
// posted, so a send is held back and posted together with the next
// receive, in one NCCL group (or at its wait, or the end of the step):
// ranks that all send before they receive then do not deadlock, as sends
// are eager in rtx-run. NCCL has no tags: messages between two ranks are
// received in the order they were sent, which is how rtx programs use them.
// Shapes: NCCL gathers and scatters along the outermost dimension, so other
// dimensions are moved outward (gather) or inward (scatter) with the transpose
// kernel.
//
//===----------------------------------------------------------------------===//

#include "Portable.h"

#include "../comm/Store.h"
#ifdef RTXRT_HAVE_GLOO
#include "../comm/Liveness.h"
#endif

#include <nccl.h>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;

namespace {

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I1:
    return ncclUint8;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return ncclSum;
  case ReduceKind::Mean:
    return ncclAvg;
  case ReduceKind::Max:
    return ncclMax;
  case ReduceKind::Min:
    return ncclMin;
  }
  return ncclSum;
}

/// Which ranks stopped, from their heartbeats (comm/Liveness.h), for a
/// timeout's message.
std::string livenessReport() {
#ifdef RTXRT_HAVE_GLOO
  return rtxrt::detail::livenessReport();
#else
  return "";
#endif
}

/// [..., n*c at dim, ...] -> [n, ..., c, ...] (contiguous pieces).
Tensor piecesOutermost(const Tensor &t, int64_t dim, int64_t n) {
  Shape split;
  std::vector<int64_t> perm = {dim};
  for (int64_t d = 0; d < t.rank(); ++d) {
    if (d == dim) {
      split.push_back(n);
      split.push_back(t.dim(d) / n);
    } else {
      split.push_back(t.dim(d));
    }
  }
  for (int64_t d = 0; d < static_cast<int64_t>(split.size()); ++d)
    if (d != dim)
      perm.push_back(d);
  return gpu::transpose(view(t, split), perm);
}

/// [n, ...piece] -> the pieces concatenated along `dim` of the piece.
Tensor concatOutermost(const Tensor &stacked, int64_t dim) {
  int64_t rank = stacked.rank() - 1;
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= dim; ++d)
    perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = dim + 1; d <= rank; ++d)
    perm.push_back(d);
  Tensor moved = dim == 0 ? stacked : gpu::transpose(stacked, perm);
  Shape merged(stacked.shape().begin() + 1, stacked.shape().end());
  merged[dim] *= stacked.dim(0);
  return view(moved, merged);
}

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(int64_t rank, const Rendezvous &rendezvous,
                   const std::vector<std::vector<int64_t>> &groups,
                   double timeoutSeconds)
      : rank_(rank), timeout_(timeoutSeconds) {
    rtxrt::detail::RunStore opened =
        rtxrt::detail::openRunStore(rendezvous, timeoutSeconds);
    auto waitFor =
        std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
    for (const auto &group : groups) {
      std::string name = rtxrt::detail::groupName(group);
      if (group.size() < 2 || comms_.count(name))
        continue;
      int64_t index = indexOf(group);
      std::string key = "nccl-id" + name;
      ncclUniqueId id;
      try {
        if (index == 0) {
          checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", name);
          opened.run->set(key, std::vector<char>(reinterpret_cast<char *>(&id),
                                                 reinterpret_cast<char *>(&id) +
                                                     sizeof id));
        } else {
          opened.run->wait({key}, waitFor);
          std::vector<char> bytes = opened.run->get(key);
          if (bytes.size() != sizeof id)
            throw Error("the ncclUniqueId in the store has " +
                        std::to_string(bytes.size()) + " bytes");
          std::memcpy(&id, bytes.data(), sizeof id);
        }
      } catch (const Error &) {
        throw;
      } catch (const std::exception &error) {
        throw Error("rank " + std::to_string(rank) +
                    " could not exchange the NCCL id of process group " + name +
                    " through " + rendezvous.store + ": " + error.what());
      }
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclComm_t comm;
      ncclResult_t status =
          ncclCommInitRankConfig(&comm, static_cast<int>(group.size()), id,
                                 static_cast<int>(index), &config);
      if (status != ncclSuccess && status != ncclInProgress)
        checkNccl(status, "ncclCommInitRankConfig", name);
      comms_[name] = comm;
      waitComm(comm, "creating the communicator", name, false);
    }
  }

  ~NcclCommunicator() override {
    if (commStream_)
      (void)cudaStreamDestroy(commStream_);
    for (auto &entry : comms_)
      if (entry.second) // null: aborted, and freed by the abort
        (void)(failed_ ? ncclCommAbort(entry.second)
                       : ncclCommDestroy(entry.second));
  }

  bool takesGpuTensors() const override { return true; }
  // Read by every wait that starts after it (waitUntil's deadline).
  void setTimeout(double seconds) override { timeout_ = seconds; }
  const char *algorithm(const Collective &, DType) const override {
    return "nccl"; // NCCL picks ring or tree itself (NCCL_ALGO)
  }

  std::vector<Tensor> exchange(const std::vector<int64_t> &group,
                               const Tensor &input,
                               const std::string &what) override {
    Tensor device = gpu::toDevice(input);
    Tensor stacked = gatherStacked(group, device, what);
    Tensor host = gpu::toHost(stacked);
    std::vector<Tensor> all;
    size_t bytes = input.nbytes();
    for (size_t i = 0; i < group.size(); ++i) {
      Tensor t = Tensor::uninitialized(input.shape(), input.dtype());
      std::memcpy(t.raw(), static_cast<unsigned char *>(host.raw()) + i * bytes,
                  bytes);
      all.push_back(t);
    }
    return all;
  }

  Tensor allReduce(const std::vector<int64_t> &group, int64_t, ReduceKind kind,
                   const Tensor &input, const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    if (group.size() == 1)
      return copy(in);
    Tensor out = gpu::empty(in.shape(), in.dtype());
    run(group, what, [&](ncclComm_t comm) {
      return ncclAllReduce(in.raw(), out.raw(), in.numel(),
                           ncclType(in.dtype()), ncclOp(kind), comm, stream());
    });
    return out;
  }

  Tensor allGather(const std::vector<int64_t> &group, int64_t, int64_t dim,
                   const Tensor &input, const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    if (group.size() == 1)
      return copy(in);
    return concatOutermost(gatherStacked(group, in, what), dim);
  }

  Tensor reduceScatter(const std::vector<int64_t> &group, int64_t,
                       ReduceKind kind, int64_t dim, const Tensor &input,
                       const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    int64_t n = static_cast<int64_t>(group.size());
    checkDivisible(in, dim, n, what);
    Shape outShape = in.shape();
    outShape[dim] /= n;
    if (n == 1)
      return copy(in);
    Tensor pieces = piecesOutermost(in, dim, n);
    // The pieces' layout, [c, ...] in the original order of dimensions.
    Tensor out = gpu::empty(
        Shape(pieces.shape().begin() + 1, pieces.shape().end()), in.dtype());
    run(group, what, [&](ncclComm_t comm) {
      return ncclReduceScatter(pieces.raw(), out.raw(), out.numel(),
                               ncclType(in.dtype()), ncclOp(kind), comm,
                               stream());
    });
    return view(out, outShape);
  }

  Tensor allToAll(const std::vector<int64_t> &group, int64_t, int64_t splitDim,
                  int64_t concatDim, const Tensor &input,
                  const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    int64_t n = static_cast<int64_t>(group.size());
    checkDivisible(in, splitDim, n, what);
    if (n == 1)
      return copy(in);
    Tensor pieces = piecesOutermost(in, splitDim, n);
    Tensor received = gpu::empty(pieces.shape(), in.dtype());
    size_t count = static_cast<size_t>(pieces.numel() / n);
    size_t bytes = count * dtypeSize(in.dtype());
    run(group, what, [&](ncclComm_t comm) {
      ncclResult_t status = ncclGroupStart();
      // Non-blocking communicators may answer ncclInProgress: go on.
      for (int64_t peer = 0;
           peer < n && (status == ncclSuccess || status == ncclInProgress);
           ++peer) {
        status = ncclSend(static_cast<char *>(pieces.raw()) + peer * bytes,
                          count, ncclType(in.dtype()), static_cast<int>(peer),
                          comm, stream());
        if (status == ncclSuccess || status == ncclInProgress)
          status = ncclRecv(static_cast<char *>(received.raw()) + peer * bytes,
                            count, ncclType(in.dtype()), static_cast<int>(peer),
                            comm, stream());
      }
      ncclResult_t end = ncclGroupEnd();
      return status == ncclSuccess ? end : status;
    });
    // received[j] is group rank j's piece for us; the pieces' dimensions
    // are the input's with splitDim divided by n.
    Shape pieceShape = in.shape();
    pieceShape[splitDim] /= n;
    Shape stackedShape = {n};
    stackedShape.insert(stackedShape.end(), pieceShape.begin(),
                        pieceShape.end());
    return concatOutermost(view(received, stackedShape), concatDim);
  }

  Tensor broadcastFrom(const std::vector<int64_t> &group, int64_t, int64_t root,
                       const Tensor &input, const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    if (group.size() == 1)
      return copy(in);
    Tensor out = gpu::empty(in.shape(), in.dtype());
    run(group, what, [&](ncclComm_t comm) {
      return ncclBroadcast(in.raw(), out.raw(), in.numel(),
                           ncclType(in.dtype()), static_cast<int>(root), comm,
                           stream());
    });
    return out;
  }

  Tensor permute(const std::vector<int64_t> &group, int64_t index,
                 const std::vector<int64_t> &pairs, const Tensor &input,
                 const std::string &what) override {
    Tensor in = gpu::toDevice(input);
    Tensor out = gpu::zeros(in.shape(), in.dtype());
    if (group.size() == 1) {
      for (size_t p = 0; p + 1 < pairs.size(); p += 2)
        if (pairs[p] == 0 && pairs[p + 1] == 0)
          return copy(in);
      return out;
    }
    run(group, what, [&](ncclComm_t comm) {
      ncclResult_t status = ncclGroupStart();
      for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
        int64_t source = pairs[p], target = pairs[p + 1];
        if (status != ncclSuccess && status != ncclInProgress)
          break;
        if (source == index && target == index) {
          copyBytes(out.raw(), in.raw(), in.nbytes(), false, false);
        } else if (source == index) {
          status = ncclSend(in.raw(), in.numel(), ncclType(in.dtype()),
                            static_cast<int>(target), comm, stream());
        } else if (target == index) {
          status = ncclRecv(out.raw(), out.numel(), ncclType(in.dtype()),
                            static_cast<int>(source), comm, stream());
        }
      }
      ncclResult_t end = ncclGroupEnd();
      return status == ncclSuccess ? end : status;
    });
    return out;
  }

private:
  int64_t indexOf(const std::vector<int64_t> &group) const {
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == rank_)
        return static_cast<int64_t>(i);
    throw Error("rank " + std::to_string(rank_) + " is not in process group " +
                rtxrt::detail::groupName(group));
  }

  void checkDivisible(const Tensor &t, int64_t dim, int64_t n,
                      const std::string &what) const {
    if (dim < 0 || dim >= t.rank() || t.dim(dim) % n != 0)
      throw Error("rank " + std::to_string(rank_) + ": " + what +
                  ": dimension " + std::to_string(dim) + " of " +
                  shapeToString(t.shape()) + " does not split over " +
                  std::to_string(n) + " ranks");
  }

  /// [n, ...input] on every rank: the group's inputs stacked in group order.
  Tensor gatherStacked(const std::vector<int64_t> &group, const Tensor &in,
                       const std::string &what) {
    int64_t n = static_cast<int64_t>(group.size());
    Shape stackedShape = {n};
    stackedShape.insert(stackedShape.end(), in.shape().begin(),
                        in.shape().end());
    if (n == 1)
      return view(copy(in), stackedShape);
    Tensor out = gpu::empty(stackedShape, in.dtype());
    run(group, what, [&](ncclComm_t comm) {
      return ncclAllGather(in.raw(), out.raw(), in.numel(),
                           ncclType(in.dtype()), comm, stream());
    });
    return out;
  }

  void checkNccl(ncclResult_t status, const char *call,
                 const std::string &group) const {
    if (status != ncclSuccess && status != ncclInProgress)
      throw Error("rank " + std::to_string(rank_) + ": " + call +
                  " failed in process group " + group + ": " +
                  ncclGetErrorString(status));
  }

  /// Enqueues a collective on the group's communicator, then waits for it
  /// against the deadline.
  template <typename Enqueue>
  void run(const std::vector<int64_t> &group, const std::string &what,
           Enqueue enqueue) {
    std::string name = rtxrt::detail::groupName(group);
    auto it = comms_.find(name);
    if (it == comms_.end())
      throw Error("rank " + std::to_string(rank_) + ": " + what +
                  ": process group " + name + " was not created");
    if (!it->second)
      throw CommunicationError("rank " + std::to_string(rank_) + ": " + what +
                               ": the NCCL communicator of process group " +
                               name + " was aborted after an earlier failure");
    if (starting_) { // on the communication stream; checked at the wait
      checkNccl(enqueue(it->second), what.c_str(), name);
      waitComm(it->second, what, name, false);
      started_.push_back(it->second);
      return;
    }
    afterStarted();
    checkNccl(enqueue(it->second), what.c_str(), name);
    waitComm(it->second, what, name, true);
  }

  ncclComm_t commOf(const std::vector<int64_t> &group,
                    const std::string &what) {
    std::string name = rtxrt::detail::groupName(group);
    auto it = comms_.find(name);
    if (it == comms_.end())
      throw Error("rank " + std::to_string(rank_) + ": " + what +
                  ": process group " + name + " was not created");
    if (!it->second)
      throw CommunicationError("rank " + std::to_string(rank_) + ": " + what +
                               ": process group " + name +
                               " was aborted after an earlier failure");
    return it->second;
  }

  /// The communication stream, created at first use.
  cudaStream_t commStream() {
    if (!commStream_)
      check(cudaStreamCreateWithFlags(&commStream_, cudaStreamNonBlocking),
            "cudaStreamCreate (communication stream)");
    return commStream_;
  }

  /// An event recorded on `s` now.
  std::shared_ptr<CUevent_st> record(cudaStream_t s) {
    cudaEvent_t event;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventRecord(event, s), "cudaEventRecord");
    return std::shared_ptr<CUevent_st>(
        event, [](cudaEvent_t e) { (void)cudaEventDestroy(e); });
  }

  /// The communication stream waits for the compute stream's work so far.
  void commAfterCompute() {
    auto ready = record(computeStream());
    check(cudaStreamWaitEvent(commStream(), ready.get(), 0),
          "cudaStreamWaitEvent");
  }

  /// The compute stream waits for everything started on the communication
  /// stream (before a synchronous collective).
  void afterStarted() {
    flushMessages();
    if (!commStream_)
      return;
    auto done = record(commStream_);
    check(cudaStreamWaitEvent(computeStream(), done.get(), 0),
          "cudaStreamWaitEvent");
  }

  /// Waits on the host until `done` has happened (checked against the
  /// deadline with the communicators' errors, poll()), then orders the
  /// compute stream after it.
  void waitEvent(const std::shared_ptr<CUevent_st> &done,
                 const std::vector<ncclComm_t> &comms, const std::string &what,
                 const std::string &group) {
    poll(comms, what, group, [&] {
      cudaError_t query = cudaEventQuery(done.get());
      if (query != cudaSuccess && query != cudaErrorNotReady)
        check(query, what.c_str());
      return query == cudaSuccess;
    });
    check(cudaStreamWaitEvent(computeStream(), done.get(), 0),
          "cudaStreamWaitEvent");
  }

  /// A send or a receive not yet posted to NCCL, and, once posted, the
  /// event after it.
  struct Message {
    bool sending = false;
    ncclComm_t comm = nullptr;
    std::string group, what;
    Tensor tensor;
    int64_t peer = 0;
    std::shared_ptr<CUevent_st> done;
  };

  /// Posts every held message in one NCCL group on the communication
  /// stream.
  void flushMessages() {
    if (held_.empty())
      return;
    std::vector<std::shared_ptr<Message>> messages;
    messages.swap(held_);
    commAfterCompute();
    ncclResult_t status = ncclGroupStart();
    for (auto &m : messages) {
      if (status != ncclSuccess && status != ncclInProgress)
        break;
      Tensor &t = m->tensor;
      status = m->sending
                   ? ncclSend(t.raw(), t.numel(), ncclType(t.dtype()),
                              static_cast<int>(m->peer), m->comm, commStream())
                   : ncclRecv(t.raw(), t.numel(), ncclType(t.dtype()),
                              static_cast<int>(m->peer), m->comm, commStream());
    }
    ncclResult_t end = ncclGroupEnd();
    checkNccl(status == ncclSuccess ? end : status, messages[0]->what.c_str(),
              messages[0]->group);
    // A non-blocking communicator puts the group's kernels on the stream
    // asynchronously (ncclGroupEnd may answer ncclInProgress first): the
    // event after them is recorded once they are there, or it would fire
    // at once, and the buffers would be read and reused while NCCL still
    // moves them (healing over NCCL delivered wrong pieces that way).
    for (auto &m : messages)
      waitComm(m->comm, m->what, m->group, false);
    auto done = record(commStream());
    for (auto &m : messages)
      m->done = done;
  }

  Completion post(std::shared_ptr<Message> message) {
    held_.push_back(message);
    if (!message->sending)
      flushMessages();
    return std::async(std::launch::deferred,
                      [this, message] {
                        if (!message->done)
                          flushMessages();
                        waitEvent(message->done, {message->comm}, message->what,
                                  message->group);
                        return message->sending ? Tensor() : message->tensor;
                      })
        .share();
  }

public:
  Completion start(const Collective &collective,
                   const std::vector<int64_t> &group, int64_t index,
                   const Tensor &input, const std::string &what) override {
    flushMessages();
    Tensor in = gpu::toDevice(input);
    commAfterCompute();
    Tensor out;
    {
      StreamScope scope(commStream());
      starting_ = true;
      try {
        out = Communicator::run(collective, group, index, in, what);
      } catch (...) {
        starting_ = false;
        throw;
      }
      starting_ = false;
    }
    auto done = record(commStream());
    std::vector<ncclComm_t> comms;
    comms.swap(started_);
    std::string name = rtxrt::detail::groupName(group);
    return std::async(std::launch::deferred,
                      [this, in, out, done, comms, what, name] {
                        waitEvent(done, comms, what, name);
                        return out;
                      })
        .share();
  }

  Completion send(const std::vector<int64_t> &group, int64_t, int64_t peer,
                  int64_t, const Tensor &input,
                  const std::string &what) override {
    auto message = std::make_shared<Message>();
    message->sending = true;
    message->comm = commOf(group, what);
    message->group = rtxrt::detail::groupName(group);
    message->what = what;
    message->tensor = gpu::toDevice(input);
    message->peer = peer;
    return post(message);
  }

  Completion recv(const std::vector<int64_t> &group, int64_t, int64_t peer,
                  int64_t, const Shape &shape, DType dtype,
                  const std::string &what) override {
    auto message = std::make_shared<Message>();
    message->comm = commOf(group, what);
    message->group = rtxrt::detail::groupName(group);
    message->what = what;
    message->tensor = gpu::empty(shape, dtype);
    message->peer = peer;
    return post(message);
  }

private:
  /// Waits until `comm`'s calls have been taken (non-blocking
  /// communicators), and with `waitStream` until the compute stream is idle.
  void waitComm(ncclComm_t comm, const std::string &what,
                const std::string &group, bool waitStream) {
    poll({comm}, what, group, [&] {
      if (!waitStream)
        return true;
      cudaError_t query = cudaStreamQuery(stream());
      if (query != cudaSuccess && query != cudaErrorNotReady)
        check(query, what.c_str());
      return query == cudaSuccess;
    });
  }

  /// Polls until no communicator of `comms` has a call in progress and
  /// `ready()` holds. A communicator's asynchronous error (a peer lost), or
  /// the deadline (--timeout: a peer hung or never joined), aborts them and
  /// throws a CommunicationError naming the rank, the op and the group,
  /// instead of hanging the job.
  template <typename Ready>
  void poll(const std::vector<ncclComm_t> &comms, const std::string &what,
            const std::string &group, Ready ready) {
    auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(timeout_ * 1000));
    for (;;) {
      bool settled = true;
      for (ncclComm_t comm : comms) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          abort(comm);
          throw CommunicationError(
              "rank " + std::to_string(rank_) + ": " + what +
              " failed in process group " + group + ": " +
              ncclGetErrorString(async) +
              " (a peer failed or its connection closed); the NCCL "
              "communicator was aborted");
        }
        settled = settled && async == ncclSuccess;
      }
      if (settled && ready())
        return;
      if (std::chrono::steady_clock::now() > deadline) {
        for (ncclComm_t comm : comms)
          abort(comm);
        throw CommunicationError(
            "rank " + std::to_string(rank_) + ": " + what +
            " in process group " + group + " timed out after " +
            std::to_string(timeout_) +
            " s (a peer failed or never joined); the NCCL "
            "communicator was aborted" +
            livenessReport());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  /// Aborts `comm`, which frees it, and forgets it, so that the destructor
  /// (run while the error unwinds) does not destroy it a second time. The
  /// destructor aborts the others too.
  void abort(ncclComm_t comm) {
    failed_ = true;
    (void)ncclCommAbort(comm);
    for (auto &entry : comms_)
      if (entry.second == comm)
        entry.second = nullptr;
  }

  int64_t rank_;
  double timeout_;
  std::map<std::string, ncclComm_t> comms_;
  /// A communicator was aborted: peers may be gone.
  bool failed_ = false;
  cudaStream_t commStream_ = nullptr;
  /// Inside start(): run() enqueues on the communication stream and does
  /// not wait; the communicators it used are collected for the wait.
  bool starting_ = false;
  std::vector<ncclComm_t> started_;
  /// Sends (and a receive) not yet posted.
  std::vector<std::shared_ptr<Message>> held_;
};

} // namespace

std::unique_ptr<Communicator>
gpu::makeNcclCommunicator(int64_t rank, int64_t, const Rendezvous &rendezvous,
                          const std::vector<std::vector<int64_t>> &groups,
                          double timeoutSeconds) {
  return std::make_unique<NcclCommunicator>(rank, rendezvous, groups,
                                            timeoutSeconds);
}
