//===- UringQueue.cpp - file transfers through io_uring -------------------===//

#include "UringQueue.h"

#include <algorithm>
#include <cerrno>

using namespace rtxrt::offload;

namespace {
/// io_uring's lengths are 32-bit, and Linux moves at most ~2 GiB per call.
constexpr size_t kMaxChunk = size_t{1} << 30;
} // namespace

std::unique_ptr<UringQueue> UringQueue::create(Tier::Done done, int &error) {
  std::unique_ptr<UringQueue> queue(new UringQueue(std::move(done)));
  // Each entry is submitted as soon as it is prepared, so a few submission
  // entries suffice for any K; completions beyond the completion queue wait
  // in the kernel (IORING_FEAT_NODROP).
  int r = io_uring_queue_init(8, &queue->ring_, 0);
  error = r < 0 ? -r : 0;
  if (error)
    return nullptr;
  UringQueue *q = queue.get();
  q->reaper_ = std::thread([q] { q->reap(); });
  return queue;
}

UringQueue::~UringQueue() {
  {
    // A NOP without a Transfer tells the reaper to end; nothing is in
    // flight, so a submission entry is free.
    std::lock_guard<std::mutex> lock(mutex_);
    if (io_uring_sqe *sqe = io_uring_get_sqe(&ring_)) {
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);
      io_uring_submit(&ring_);
    }
  }
  reaper_.join();
  io_uring_queue_exit(&ring_);
}

int UringQueue::start(Transfer &t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return submit(t);
}

/// Submits the rest of t; 0 or an errno. mutex_ is held.
int UringQueue::submit(Transfer &t) {
  io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
  if (!sqe)
    return EBUSY; // cannot happen: every entry is submitted at once
  unsigned chunk = unsigned(std::min(t.size - t.done, kMaxChunk));
  if (t.write)
    io_uring_prep_write(sqe, t.fd, t.data + t.done, chunk, t.done);
  else
    io_uring_prep_read(sqe, t.fd, t.data + t.done, chunk, t.done);
  io_uring_sqe_set_data(sqe, &t);
  int r = io_uring_submit(&ring_);
  return r < 0 ? -r : 0;
}

void UringQueue::reap() {
  for (;;) {
    io_uring_cqe *cqe = nullptr;
    // Waiting fails only when interrupted (EINTR): just wait again.
    if (io_uring_wait_cqe(&ring_, &cqe) < 0)
      continue;
    auto *t = static_cast<Transfer *>(io_uring_cqe_get_data(cqe));
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (!t)
      return; // the destructor's NOP
    int error = 0;
    {
      // The submitter wrote t under the mutex and the kernel handed it
      // over: taking the mutex makes that order visible to the C++ memory
      // model (and to ThreadSanitizer), which does not see through the ring.
      std::lock_guard<std::mutex> lock(mutex_);
      if (res > 0)
        t->done += size_t(res);
      if (res == -EINTR || res == -EAGAIN || (res > 0 && t->done < t->size)) {
        error = submit(*t);
        if (!error)
          continue;
      } else if (res < 0) {
        error = -res;
      } else if (t->done < t->size) {
        error = t->write ? EIO : kShortFile;
      }
    }
    done_(t, error);
  }
}
