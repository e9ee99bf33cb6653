//===- UringQueue.h - file transfers through io_uring -----------*- C++ -*-===//
//
// The caller submits a transfer's read or write; a reaper thread waits for
// completions and resubmits the rest of a short transfer. Submissions (the
// caller's and the reaper's) are made under mutex_; the reaper waits for
// completions without it, which liburing allows (one thread submits,
// another reaps).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_URINGQUEUE_H
#define RTXRT_OFFLOAD_URINGQUEUE_H

#include "Tier.h"

#include <liburing.h>

#include <memory>
#include <mutex>
#include <thread>

namespace rtxrt::offload {

class UringQueue final : public TransferThread {
public:
  /// A ring and its reaper, or null with `error` set (an errno) where the
  /// kernel or a container refuses io_uring.
  static std::unique_ptr<UringQueue> create(Tier::Done done, int &error);
  /// Stops the reaper; every transfer has ended.
  ~UringQueue() override;

  /// Submits t, whose file is open; 0 or an errno.
  int start(Transfer &t) override;

private:
  explicit UringQueue(Tier::Done done) : done_(std::move(done)) {}
  int submit(Transfer &t);
  void reap();

  Tier::Done done_;
  io_uring ring_{};
  std::mutex mutex_; // submissions, and what a submitter wrote in a Transfer
  std::thread reaper_;
};

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_URINGQUEUE_H
