//===- Liveness.cpp - which rank stopped, when a collective times out -----===//

#include "Liveness.h"

#include "store/KeyBoard.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

std::unique_ptr<KeyBoard> openBoard(const Rendezvous &rendezvous,
                                    std::chrono::milliseconds timeout) {
  return openKeyBoard(rendezvous.store, {"rtx-liveness", rendezvous.run},
                      timeout);
}

/// A heartbeat: "BEATS PROGRESS".
struct Beat {
  int64_t beats = -1, progress = -1;
};
std::optional<Beat> parse(const std::optional<std::string> &text) {
  if (!text)
    return std::nullopt;
  Beat beat;
  std::istringstream in(*text);
  if (!(in >> beat.beats >> beat.progress))
    return std::nullopt;
  return beat;
}

std::mutex currentMutex;
Liveness *current = nullptr;

} // namespace

Liveness::Liveness(const Rendezvous &rendezvous, int64_t rank, int64_t world,
                   double timeoutSeconds)
    : rank_(rank), world_(world) {
  int64_t ms =
      std::clamp<int64_t>(static_cast<int64_t>(timeoutSeconds * 100), 50, 1000);
  interval_ = std::chrono::milliseconds(ms);
  auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
  // Two connections: the heartbeat thread never shares one with report().
  try {
    writer_ = openBoard(rendezvous, timeout);
    reader_ = openBoard(rendezvous, timeout);
  } catch (const std::exception &) {
    // The rendezvous reports an unreachable store with its own message.
    writer_.reset();
    reader_.reset();
  }
  if (!writer_ || !reader_)
    return;
  beat();
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait_for(lock, interval_,
                     [this] { return stopping_ || progressed_; });
      if (stopping_)
        return;
      progressed_ = false;
      lock.unlock();
      beat();
      lock.lock();
    }
  });
  std::lock_guard<std::mutex> lock(currentMutex);
  current = this;
}

Liveness::~Liveness() {
  {
    std::lock_guard<std::mutex> lock(currentMutex);
    if (current == this)
      current = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void Liveness::setProgress(int64_t steps) {
  progress_ = steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    progressed_ = true;
  }
  wake_.notify_one();
}

void Liveness::beat() {
  try {
    writer_->put(std::to_string(rank_), std::to_string(++beats_) + " " +
                                            std::to_string(progress_.load()));
  } catch (const std::exception &) {
    // The store stopped answering: the collectives will say so.
  }
}

std::string Liveness::report() {
  if (!reader_)
    return "";
  bool unreadable = false;
  auto readAll = [&] {
    std::map<int64_t, std::optional<Beat>> beats;
    for (int64_t r = 0; r < world_ && !unreadable; ++r)
      if (r != rank_) {
        try {
          beats[r] = parse(reader_->get(std::to_string(r)));
        } catch (const std::exception &) {
          unreadable = true;
        }
      }
    return beats;
  };
  auto first = readAll();
  // A store that does not answer says nothing about the ranks.
  if (unreadable)
    return "; the ranks' heartbeats cannot be read either (the store does "
           "not answer)";
  // A live rank beats at least twice in this time.
  std::this_thread::sleep_for(interval_ * 5 / 2);
  auto second = readAll();
  if (unreadable)
    return "; the ranks' heartbeats cannot be read either (the store does "
           "not answer)";
  int64_t mine = progress_.load();
  std::string report;
  for (int64_t r = 0; r < world_; ++r) {
    if (r == rank_)
      continue;
    const std::optional<Beat> &a = first[r], &b = second[r];
    std::string what;
    if (!b)
      what = "rank " + std::to_string(r) +
             " has no heartbeat (it never started, or cannot reach the store)";
    else if (a && a->beats == b->beats)
      what = "rank " + std::to_string(r) +
             " stopped responding (its heartbeat stalled after step " +
             std::to_string(b->progress) + "; stopped, hung or cut off)";
    else if (b->progress < mine)
      what = "rank " + std::to_string(r) + " is alive but behind (step " +
             std::to_string(b->progress) + ", this rank finished step " +
             std::to_string(mine) + ")";
    if (!what.empty())
      report += "; " + what;
  }
  return report;
}

std::string rtxrt::detail::livenessReport() {
  std::lock_guard<std::mutex> lock(currentMutex);
  return current ? current->report() : "";
}
