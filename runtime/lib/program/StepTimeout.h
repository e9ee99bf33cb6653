//===- StepTimeout.h - collective timeouts sized to the step time -*- C++
//-*-===//
//
// --timeout auto: a dead or hung rank is found in a few step times instead
// of a fixed minute. The first steps (allocation, first touch, a loaded
// machine's start) run under the rendezvous timeout; after kWarmupSteps the
// timeout of a collective becomes kMultiple x the p99 of the recent step
// times, clamped to [kFloorSeconds, kCeilingSeconds]. A collective waits at
// most about one step time for a slow peer (the lag between ranks, or a
// pipeline bubble), so ten of them is a wide margin; the floor keeps a
// loaded machine's scheduling hiccups from being taken for a hang.
// Blocking work outside the steps (the last checkpoint, the results) runs
// under the rendezvous timeout again (relax()).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_STEPTIMEOUT_H
#define RTXRT_LIB_PROGRAM_STEPTIMEOUT_H

#include <cstdint>
#include <deque>
#include <functional>

namespace rtxrt::program {

class StepTimeout {
public:
  static constexpr int64_t kWarmupSteps = 3;
  static constexpr double kMultiple = 10;
  static constexpr double kFloorSeconds = 2;
  static constexpr double kCeilingSeconds = 60;
  /// The step times the p99 is taken over.
  static constexpr size_t kWindow = 100;

  /// With `automatic` false the steps run under `fixedSeconds` from the
  /// start; else under `rendezvousSeconds` until the warm-up is over.
  StepTimeout(bool automatic, double fixedSeconds, double rendezvousSeconds);

  /// The timeout of the rendezvous (never less than a fixed timeout).
  double rendezvous() const { return rendezvous_; }
  /// The shortest timeout the steps will run under: what heartbeats are
  /// paced by (comm/Liveness.h).
  double shortest() const { return automatic_ ? kFloorSeconds : fixed_; }
  /// From now on `apply` sets the communicator's timeout; applies the
  /// steps' first timeout.
  void start(std::function<void(double)> apply);

  /// After each step, with its wall time. Returns the timeout now in force.
  double observe(double stepSeconds);
  /// Before blocking work outside the steps: the rendezvous timeout.
  void relax();
  /// The timeout now in force.
  double current() const { return current_; }

  /// The auto timeout for `times` (exposed for tests).
  static double sized(const std::deque<double> &times);

private:
  void set(double seconds);

  bool automatic_;
  double fixed_, rendezvous_, current_ = 0;
  std::function<void(double)> apply_;
  std::deque<double> times_;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_STEPTIMEOUT_H
