//===- WorkerThread.h - blocking transfers on a thread of their own -*- C++
//-*-//
//
// Host copies and pread/pwrite are blocking calls: a worker thread runs them
// one at a time, in the order they were started, so that they overlap the
// caller's work (as ZeRO-Offload's copies do).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_WORKERTHREAD_H
#define RTXRT_OFFLOAD_WORKERTHREAD_H

#include "Tier.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace rtxrt::offload {

class WorkerThread final : public TransferThread {
public:
  /// `move` moves a transfer's bytes with blocking calls (0 or an error);
  /// `done` then ends it, on the worker.
  using Move = std::function<int(Transfer &)>;
  WorkerThread(Move move, Tier::Done done);
  /// Runs what was started, then ends the thread.
  ~WorkerThread() override;

  int start(Transfer &t) override;

private:
  void loop();

  Move move_;
  Tier::Done done_;
  std::mutex mutex_;
  std::condition_variable work_; // the queue grew, or stopping_
  std::deque<Transfer *> queue_;
  bool stopping_ = false;
  std::thread thread_; // last: it starts once the rest is ready
};

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_WORKERTHREAD_H
