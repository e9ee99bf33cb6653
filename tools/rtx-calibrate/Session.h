//===- Session.h - the ranks of one calibration -----------------*- C++ -*-===//
//
// One process, or the N that rtx-launch (or torchrun, Slurm, mpirun)
// started: found the way emitted programs find themselves
// (rtxrt::readLaunchEnvironment) and joined by the communicator they use
// (rtxrt::makeGlooCommunicator), so that what is timed here is what the
// programs run.
//
// Ranks must issue the same collectives in the same order. Every decision
// that changes that order (how many calls to time, what the time budget
// still allows) is therefore taken from values that went through agree():
// each rank sees the same numbers, so each decides the same.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_CALIBRATE_SESSION_H
#define RTX_TOOLS_RTX_CALIBRATE_SESSION_H

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/program/Program.h"

#include <chrono>
#include <cstdarg>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rtx::calibrate {

class Session {
public:
  /// Several ranks rendezvous through `store` (file:DIR or
  /// redis://HOST:PORT) and create a Gloo context for each group this rank
  /// belongs to: the block of g consecutive ranks for every g > 1 that
  /// divides the world, and its pair (2i, 2i + 1) for send/recv.
  Session(const rtxrt::LaunchEnvironment &launch, const std::string &store,
          double timeoutSeconds);

  int64_t rank() const { return rank_; }
  int64_t world() const { return world_; }
  /// Null for one rank.
  rtxrt::Communicator *communicator() { return comm_.get(); }

  /// The group sizes measured: every g in [2, world] that divides it.
  std::vector<int64_t> groupSizes() const;
  /// This rank's group of size g: ranks [g*(rank/g), g*(rank/g) + g).
  std::vector<int64_t> groupOf(int64_t g) const;
  /// This rank's send/recv pair (2i, 2i + 1); empty for the last rank of an
  /// odd world, which has none.
  std::vector<int64_t> pairOf() const;

  /// The elementwise maximum of every rank's `values` (the slowest rank's
  /// time: a synchronous step waits for it). Also agrees on the elapsed
  /// time; every rank calls it with the same number of values.
  std::vector<double> agreeMax(const std::vector<double> &values);
  /// Seconds since the session began, as of the last agreeMax (the largest
  /// of the ranks' clocks): the same on every rank.
  double agreedElapsed() const { return agreedElapsed_; }
  /// Waits until every rank of `group` gets here (a one-float all-reduce).
  void barrier(const std::vector<int64_t> &group);

  /// Rank 0 prints a progress line on stderr, prefixed "rtx-calibrate: ".
  void progress(const char *format, ...) __attribute__((format(printf, 2, 3)));

private:
  double localElapsed() const;

  int64_t rank_ = 0, world_ = 1;
  std::chrono::steady_clock::time_point start_;
  double agreedElapsed_ = 0;
  std::unique_ptr<rtxrt::Communicator> comm_;
};

/// How one quantity is timed: repetitions of a batch of calls, with the
/// batch long enough for the clock to resolve it.
struct TimingPlan {
  int repetitions = 5;
  /// Seconds one repetition should take at least; the batch size follows
  /// from a probe call.
  double minRepetitionSeconds = 0.05;
  int64_t maxCallsPerRepetition = 100000;
};

/// Computes (small GEMMs of the runtime) on this rank for `seconds`: the
/// work a program's step does between two collectives, while the
/// communicator's threads wait.
void computeFor(double seconds);

/// Times `call` on every rank: one warm-up call (first-touch pages,
/// connections), one probe call, then `plan.repetitions` batches whose size
/// follows from the slowest rank's probe. Before each batch `beforeBatch`
/// runs, untimed (a group barrier, so the ranks start together). Returns
/// the slowest rank's mean time per call (what a step that makes such calls
/// pays for them, stretched calls included).
/// `participates` false: this rank makes no calls but takes part in the
/// agreement (a rank without a send/recv partner). `beforeCall`, when set,
/// runs untimed before every call (the warm-up and the probe included),
/// and every call is then timed on its own; the batch size counts its time.
double timeCall(Session &session, const TimingPlan &plan,
                const std::function<void()> &call,
                const std::function<void()> &beforeBatch = nullptr,
                bool participates = true,
                const std::function<void()> &beforeCall = nullptr);

} // namespace rtx::calibrate

#endif // RTX_TOOLS_RTX_CALIBRATE_SESSION_H
