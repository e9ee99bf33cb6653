//===- StepContext.cpp - the collectives an emitted step calls ------------===//

#include "rtxrt/Program.h"

#include "rtxrt/Collectives.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
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
  Pending push(std::packaged_task<Tensor()> job) {
    Pending result = job.get_future().share();
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

namespace {
/// Adds the lifetime of this object to `seconds` (time spent waiting in a
/// collective).
class CollectiveTimer {
public:
  explicit CollectiveTimer(double &seconds)
      : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~CollectiveTimer() {
    seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
  }

private:
  double &seconds_;
  std::chrono::steady_clock::time_point start_;
};
} // namespace

StepContext::StepContext(int64_t rank, const MeshLayout &mesh,
                         Communicator &comm, const DeviceRuntime *device)
    : rank_(rank), mesh_(mesh), comm_(comm), device_(device) {}

StepContext::~StepContext() = default;

void StepContext::drain() {
  if (async_) {
    CollectiveTimer timer(collectiveSeconds_);
    async_->drain();
  }
}

StepContext::Pending StepContext::allReduceStart(const char *what,
                                                 const Axes &axes,
                                                 ReduceKind kind,
                                                 const Tensor &t) {
  std::string name = what;
  std::packaged_task<Tensor()> job([this, name, axes, kind, t] {
    return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
      return comm_.allReduce(group, index, kind, x, name);
    });
  });
  if (t.onGpu()) { // device work stays on the thread that owns the device
    Pending result = job.get_future().share();
    drain();
    job();
    return result;
  }
  if (!async_)
    async_ = std::make_unique<AsyncQueue>();
  return async_->push(std::move(job));
}

Tensor StepContext::wait(const Pending &pending) {
  CollectiveTimer timer(collectiveSeconds_);
  return pending.get();
}

template <typename F>
Tensor StepContext::run(const Axes &axes, const Tensor &t, F &&collective) {
  // Started all-reduces run here on the communication thread: only the
  // step's own thread counts its waiting (wait() and drain() do).
  std::optional<CollectiveTimer> timer;
  if (!async_ || std::this_thread::get_id() != async_->worker.get_id())
    timer.emplace(collectiveSeconds_);
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  if (!t.onGpu() || comm_.takesGpuTensors())
    return collective(group, index, t);
  if (!device_)
    throw Error("a GPU tensor reached a collective of a host program");
  return device_->toDevice(collective(group, index, device_->toHost(t)));
}

Tensor StepContext::allReduce(const char *what, const Axes &axes,
                              ReduceKind kind, const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allReduce(group, index, kind, x, what);
  });
}
Tensor StepContext::allGather(const char *what, const Axes &axes, int64_t dim,
                              const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allGather(group, index, dim, x, what);
  });
}
Tensor StepContext::reduceScatter(const char *what, const Axes &axes,
                                  ReduceKind kind, int64_t dim,
                                  const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.reduceScatter(group, index, kind, dim, x, what);
  });
}
Tensor StepContext::allToAll(const char *what, const Axes &axes,
                             int64_t splitDim, int64_t concatDim,
                             const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allToAll(group, index, splitDim, concatDim, x, what);
  });
}
Tensor StepContext::broadcastFrom(const char *what, const Axes &axes,
                                  int64_t root, const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.broadcastFrom(group, index, root, x, what);
  });
}
Tensor StepContext::permute(const char *what, const Axes &axes,
                            const std::vector<int64_t> &pairs,
                            const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.permute(group, index, pairs, x, what);
  });
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

