//===- StepContext.cpp - the collectives an emitted step calls ------------===//

#include "rtxrt/offload/OffloadStore.h"
#include "rtxrt/program/StepContext.h"

#include "rtxrt/comm/Collectives.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

using namespace rtxrt;

//===----------------------------------------------------------------------===//
// StepContext
//===----------------------------------------------------------------------===//

/// One worker thread running started collectives in the order they were
/// started.
struct StepContext::AsyncQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::packaged_task<Tensor()>> jobs;
  int64_t unfinished = 0; // queued or running
  bool stopping = false;
  std::thread worker;

  AsyncQueue() {
    worker = std::thread([this] {
      for (;;) {
        std::packaged_task<Tensor()> job;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [this] { return stopping || !jobs.empty(); });
          if (jobs.empty())
            return;
          job = std::move(jobs.front());
          jobs.pop_front();
        }
        job(); // an exception is stored in the job's future
        std::lock_guard<std::mutex> lock(mutex);
        --unfinished;
        changed.notify_all();
      }
    });
  }
  ~AsyncQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }
  Completion push(std::packaged_task<Tensor()> job) {
    Completion result = job.get_future().share();
    std::lock_guard<std::mutex> lock(mutex);
    jobs.push_back(std::move(job));
    ++unfinished;
    changed.notify_all();
    return result;
  }
  void drain() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [this] { return unfinished == 0; });
  }
};

CommunicationStats &
CommunicationStats::operator+=(const CommunicationStats &o) {
  exposedSeconds += o.exposedSeconds;
  exposedAllReduceSeconds += o.exposedAllReduceSeconds;
  busySeconds += o.busySeconds;
  busBytes += o.busBytes;
  collectives += o.collectives;
  return *this;
}

/// nccl-tests' bus bytes of one collective of `input` over `n` ranks
/// (its PERFORMANCE.md): the bytes each rank's link carries, so that bus
/// bytes over time compares with the link's bandwidth for any group size.
static double busBytes(const Collective &c, const Tensor &input, int64_t n) {
  double bytes = static_cast<double>(input.nbytes());
  if (n < 2)
    return 0;
  double share = double(n - 1) / double(n);
  switch (c.kind) {
  case Collective::Kind::AllReduce:
    return bytes * 2 * share;
  case Collective::Kind::AllGather: // the gathered result is n inputs
    return bytes * double(n) * share;
  case Collective::Kind::ReduceScatter:
  case Collective::Kind::AllToAll:
    return bytes * share;
  case Collective::Kind::BroadcastFrom:
  case Collective::Kind::Permute:
    return bytes;
  }
  return bytes;
}

static double seconds(int64_t startNs, int64_t endNs) {
  return double(endNs - startNs) * 1e-9;
}

StepContext::StepContext(int64_t rank, const MeshLayout &mesh,
                         Communicator &comm, const DeviceRuntime *device)
    : rank_(rank), mesh_(mesh), comm_(comm), device_(device),
      opTiming_(device) {}

StepContext::~StepContext() = default;

CommunicationStats StepContext::takeCommunicationStats() {
  std::lock_guard<std::mutex> lock(statsMutex_);
  CommunicationStats taken = stats_;
  stats_ = CommunicationStats();
  return taken;
}

void StepContext::waited(const char *name, const char *what, int64_t startNs,
                         bool allReduce) {
  int64_t endNs = Tracer::now();
  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.exposedSeconds += seconds(startNs, endNs);
    if (allReduce)
      stats_.exposedAllReduceSeconds += seconds(startNs, endNs);
  }
  if (tracer_ && tracer_->active())
    tracer_->span(TraceLane::Compute, name, "wait", startNs, endNs,
                  "\"op\": " + jsonQuote(what));
}

void StepContext::ranCollective(const char *what, const Collective &collective,
                                const std::vector<int64_t> &group,
                                const Tensor &input, int64_t startNs,
                                int64_t endNs, TraceLane lane,
                                int64_t issuedNs) {
  double bus = busBytes(collective, input, static_cast<int64_t>(group.size()));
  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.busySeconds += seconds(startNs, endNs);
    stats_.busBytes += bus;
    ++stats_.collectives;
  }
  if (!tracer_ || !tracer_->active())
    return;
  std::string ranks = "[";
  for (size_t i = 0; i < group.size(); ++i)
    ranks += (i ? ", " : "") + std::to_string(group[i]);
  ranks += "]";
  std::string args = "\"op\": " + jsonQuote(what) + ", \"group\": " + ranks +
                     ", \"bytes\": " + std::to_string(input.nbytes()) +
                     ", \"bus_bytes\": " + std::to_string(int64_t(bus)) +
                     ", \"algorithm\": " +
                     jsonQuote(comm_.algorithm(collective, input.dtype()));
  if (issuedNs)
    args += ", \"queued_us\": " +
            std::to_string(double(startNs - issuedNs) / 1000.0);
  tracer_->span(lane, collective.name(), "collective", startNs, endNs,
                std::move(args));
}

void StepContext::drain() {
  if (async_) {
    int64_t start = Tracer::now();
    async_->drain();
    waited("wait (drain)", "the started collectives before a synchronous one",
           start, false);
  }
}

Completion StepContext::toDeviceAtWait(Completion onHost) const {
  const DeviceRuntime *device = device_;
  return std::async(std::launch::deferred,
                    [onHost, device] { return device->toDevice(onHost.get()); })
      .share();
}

StepContext::Pending StepContext::track(Completion completion, const char *what,
                                        bool allReduce) {
  Pending pending{std::move(completion), nextId_++, allReduce};
  unwaited_[pending.id] = what;
  return pending;
}

StepContext::Pending StepContext::start(const char *what, const Axes &axes,
                                        const Collective &collective,
                                        const Tensor &t) {
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  std::string name = what;
  bool allReduce = collective.kind == Collective::Kind::AllReduce;
  if (t.onGpu() && comm_.takesGpuTensors()) {
    // The backend orders it on the device itself (a communication stream
    // and events); the host thread only checks its completion at the wait.
    drain();
    if (Completion started = comm_.start(collective, group, index, t, name);
        started.valid())
      return track(std::move(started), what, allReduce);
    int64_t begin = Tracer::now();
    Tensor result = comm_.run(collective, group, index, t, name);
    ranCollective(what, collective, group, t, begin, Tracer::now(),
                  TraceLane::Compute, 0);
    return track(completed(result), what, allReduce);
  }
  if (t.onGpu() && !device_)
    throw Error("a GPU tensor reached a collective of a host program");
  // Staged through host memory: the input is copied now, in program order on
  // the device, and the result goes back to the device at the wait, on the
  // thread that owns the device.
  Tensor input = t.onGpu() ? device_->toHost(t) : t;
  int64_t issued = Tracer::now();
  std::packaged_task<Tensor()> job(
      [this, name, group, index, collective, input, issued] {
        int64_t begin = Tracer::now();
        Tensor result = comm_.run(collective, group, index, input, name);
        ranCollective(name.c_str(), collective, group, input, begin,
                      Tracer::now(), TraceLane::Communication, issued);
        return result;
      });
  if (!async_)
    async_ = std::make_unique<AsyncQueue>();
  Completion onHost = async_->push(std::move(job));
  if (!t.onGpu())
    return track(std::move(onHost), what, allReduce);
  return track(toDeviceAtWait(std::move(onHost)), what, allReduce);
}

Tensor StepContext::wait(const Pending &pending) {
  auto it = unwaited_.find(pending.id);
  if (it == unwaited_.end())
    throw Error("rank " + std::to_string(rank_) +
                ": rtx.wait on an operation that is not pending (waited "
                "twice, or never started)");
  std::string what = std::move(it->second);
  unwaited_.erase(it);
  int64_t start = Tracer::now();
  // The span and the count also when the wait rethrows the op's error.
  struct Waited {
    StepContext &context;
    const char *what;
    int64_t start;
    bool allReduce;
    ~Waited() { context.waited("wait", what, start, allReduce); }
  } waited{*this, what.c_str(), start, pending.allReduce};
  return pending.completion.get();
}

StepContext::Pending StepContext::offloadFetch(const char *what,
                                               const char *key, bool onHost) {
  if (!offload_)
    throw Error(std::string(what) +
                ": the program fetches an offloaded buffer, but the run has "
                "no offload store");
  int64_t start = Tracer::now();
  Completion read = offload_->fetch(key);
  // Waiting for a slot is the step waiting for the tier (backpressure).
  offloadWaited("wait (offload slot)", what, start);
  return track(device_ && !onHost ? toDeviceAtWait(std::move(read))
                                  : std::move(read),
               what);
}

void StepContext::offloadStore(const char *what, const char *key,
                               const Tensor &t) {
  if (!offload_)
    throw Error(std::string(what) +
                ": the program stores an offloaded buffer, but the run has "
                "no offload store");
  int64_t start = Tracer::now();
  offload_->store(key, t.onGpu() ? device_->toHost(t) : t);
  offloadWaited("wait (offload slot)", what, start);
}

void StepContext::offloadWaited(const char *name, const char *what,
                                int64_t startNs) {
  // Traced, not counted as communication: the tier is not the network.
  int64_t endNs = Tracer::now();
  if (tracer_ && tracer_->active() && endNs - startNs > 10000)
    tracer_->span(TraceLane::Compute, name, "wait", startNs, endNs,
                  "\"op\": " + jsonQuote(what));
}

void StepContext::finishStep() {
  if (offload_) {
    // The step's writes are its state: the next step reads them.
    int64_t start = Tracer::now();
    offload_->flush();
    offloadWaited("wait (offload writes)", "the step's offload writes", start);
  }
  drain();
  if (!sends_.empty()) {
    int64_t start = Tracer::now();
    for (auto &[what, completion] : sends_)
      completion.get();
    waited("wait (sends)", "the step's synchronous sends", start, false);
  }
  sends_.clear();
  if (!unwaited_.empty()) {
    std::string first = unwaited_.begin()->second;
    size_t count = unwaited_.size();
    unwaited_.clear();
    throw Error("rank " + std::to_string(rank_) + ": " + std::to_string(count) +
                " started operation(s) were never waited in this step, the "
                "first " +
                first + ": every rtx.*_start needs its rtx.wait");
  }
}

void StepContext::checkPeer(const char *what, const Axes &axes,
                            int64_t peer) const {
  int64_t n = mesh_.groupSize(axes);
  if (peer < 0 || peer >= n)
    throw Error(std::string(what) + ": peer " + std::to_string(peer) +
                " is outside the group of " + std::to_string(n) +
                " ranks of rank " + std::to_string(rank_));
}

void StepContext::send(const char *what, const Axes &axes, int64_t peer,
                       int64_t tag, const Tensor &t) {
  Pending pending = sendStart(what, axes, peer, tag, t);
  unwaited_.erase(pending.id);
  sends_.emplace_back(what, pending.completion);
}

StepContext::Pending StepContext::sendStart(const char *what, const Axes &axes,
                                            int64_t peer, int64_t tag,
                                            const Tensor &t) {
  checkPeer(what, axes, peer);
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  if (peer == index && !comm_.messagesToSelf()) {
    // To itself: the message waits for its recv.
    selfMessages_[tag].push_back(t);
    return track(completed(Tensor()), what);
  }
  Tensor input = t;
  if (t.onGpu() && !comm_.takesGpuTensors()) {
    if (!device_)
      throw Error("a GPU tensor reached rtx.send in a host program");
    input = device_->toHost(t);
  }
  return track(comm_.send(group, index, peer, tag, input, what), what);
}

Tensor StepContext::recv(const char *what, const Axes &axes, int64_t peer,
                         int64_t tag, const Shape &shape, DType dtype) {
  return wait(recvStart(what, axes, peer, tag, shape, dtype));
}

StepContext::Pending StepContext::recvStart(const char *what, const Axes &axes,
                                            int64_t peer, int64_t tag,
                                            const Shape &shape, DType dtype) {
  checkPeer(what, axes, peer);
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  if (peer == index && !comm_.messagesToSelf()) {
    auto &queue = selfMessages_[tag];
    if (queue.empty())
      throw Error(std::string(what) + ": rank " + std::to_string(rank_) +
                  " receives tag " + std::to_string(tag) +
                  " from itself, but sent nothing under it before");
    Tensor message = queue.front();
    queue.pop_front();
    if (message.shape() != shape || message.dtype() != dtype)
      throw Error(std::string(what) + ": expected " + shapeToString(shape) +
                  " " + dtypeName(dtype) + ", but the message under tag " +
                  std::to_string(tag) + " is " +
                  shapeToString(message.shape()) + " " +
                  dtypeName(message.dtype()));
    return track(completed(message), what);
  }
  Completion received = comm_.recv(group, index, peer, tag, shape, dtype, what);
  if (!device_ || comm_.takesGpuTensors())
    return track(std::move(received), what);
  // A GPU program whose process groups are on the host: the message goes to
  // the device at the wait.
  return track(toDeviceAtWait(std::move(received)), what);
}

template <typename F>
Tensor StepContext::run(const Axes &axes, const Tensor &t, F &&collective) {
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  if (!t.onGpu() || comm_.takesGpuTensors())
    return collective(group, index, t);
  if (!device_)
    throw Error("a GPU tensor reached a collective of a host program");
  return device_->toDevice(collective(group, index, device_->toHost(t)));
}

Tensor StepContext::collective(const char *what, const Axes &axes,
                               const Collective &collective, const Tensor &t) {
  drain();
  int64_t start = Tracer::now();
  Tensor result =
      run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
        return comm_.run(collective, group, index, x, what);
      });
  int64_t end = Tracer::now();
  // A synchronous collective: all of its time is exposed.
  ranCollective(what, collective, mesh_.group(rank_, axes), t, start, end,
                TraceLane::Compute, 0);
  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.exposedSeconds += seconds(start, end);
    if (collective.kind == Collective::Kind::AllReduce)
      stats_.exposedAllReduceSeconds += seconds(start, end);
  }
  return result;
}
Tensor StepContext::meshSlice(const Axes &axes, int64_t dim, const Tensor &t) {
  int64_t n = mesh_.groupSize(axes), index = mesh_.indexInGroup(rank_, axes);
  if (t.onGpu()) {
    if (!device_)
      throw Error("a GPU tensor reached rtx.mesh_slice in a host program");
    return device_->sliceGroup(t, dim, n, index);
  }
  return sliceGroup(t, dim, n, index);
}
