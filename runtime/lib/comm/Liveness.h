//===- Liveness.h - which rank stopped on a timeout -------------*- C++ -*-===//
//
// A collective that times out says which process group it waited in, not
// which rank stopped. Every rank of a multi-rank program therefore keeps a
// heartbeat in the rendezvous store from a background thread: a beat count
// and its progress (the steps it finished), every interval (a tenth of
// --timeout, 50 ms to 1 s) and whenever its progress changes. On a timeout,
// report() reads every heartbeat twice, a few intervals apart, and names the
// ranks whose beat did not move (stopped, or cut off from the store), that
// never wrote one (never started), or that are behind this rank. No clocks are
// compared, so it holds across machines.
//
// Heartbeats live beside the store's keys: files DIR/rtx-liveness/RUN/RANK
// for file:DIR (written aside and renamed), keys rtx-liveness:RUN:RANK for
// redis://HOST:PORT (on their own connection, with the store's timeout).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMM_LIVENESS_H
#define RTXRT_LIB_COMM_LIVENESS_H

#include "rtxrt/comm/Communicator.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rtxrt::detail {

class KeyBoard;

class Liveness {
public:
  /// Starts this rank's heartbeat in the rendezvous' store, under its run.
  /// While it lives, livenessReport() asks it.
  Liveness(const Rendezvous &rendezvous, int64_t rank, int64_t world,
           double timeoutSeconds);
  ~Liveness();
  Liveness(const Liveness &) = delete;
  Liveness &operator=(const Liveness &) = delete;

  /// This rank finished `steps` steps: beats at once (the heartbeat thread
  /// writes the newest progress whenever it changed, one write at a time),
  /// so that a rank stopped between two interval beats is reported at the
  /// step it reached, not at the one of its last periodic beat.
  void setProgress(int64_t steps);
  /// "; rank 1 stopped responding (...)" naming each rank that stopped, never
  /// came, or is behind; empty when every rank looks alive and level.
  std::string report();

private:
  void beat();

  int64_t rank_, world_;
  std::chrono::milliseconds interval_;
  std::unique_ptr<KeyBoard> writer_, reader_;
  std::atomic<int64_t> progress_{0};
  int64_t beats_ = 0;
  std::mutex mutex_;
  /// Wakes the heartbeat thread: to stop, or to write new progress.
  std::condition_variable wake_;
  bool stopping_ = false, progressed_ = false;
  std::thread thread_;
};

/// The report of the Liveness of this process, or empty without one. The
/// communicators' error paths append it to a timeout's message.
std::string livenessReport();

} // namespace rtxrt::detail

#endif // RTXRT_LIB_COMM_LIVENESS_H
