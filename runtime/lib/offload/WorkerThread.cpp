//===- WorkerThread.cpp - blocking transfers on a thread of their own -----===//

#include "WorkerThread.h"

using namespace rtxrt::offload;

WorkerThread::WorkerThread(Move move, Tier::Done done)
    : move_(std::move(move)), done_(std::move(done)),
      thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

int WorkerThread::start(Transfer &t) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&t);
  }
  work_.notify_one();
  return 0;
}

void WorkerThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;
    Transfer *t = queue_.front();
    queue_.pop_front();
    lock.unlock();
    int error = move_(*t);
    done_(t, error);
    lock.lock();
  }
}
