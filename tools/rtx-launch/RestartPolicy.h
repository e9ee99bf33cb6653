//===- RestartPolicy.h - the restart budget ---------------------*- C++ -*-===//
//
// --max-restarts R in --restart-window S: failures that restart the ranks,
// and in-job replacements alike, count against one budget of R in any S
// seconds. Between restarts the launcher backs off: 0.5 s, doubling per
// recent failure, at most 8 s.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_RESTARTPOLICY_H
#define RTX_TOOLS_RTX_LAUNCH_RESTARTPOLICY_H

#include <chrono>
#include <vector>

namespace rtxlaunch {

class RestartPolicy {
public:
  RestartPolicy(int maxRestarts, double windowSeconds)
      : maxRestarts_(maxRestarts), windowSeconds_(windowSeconds) {}

  /// A failure now; returns the failures within the window, this one too.
  int recordFailure();
  /// The failures within the window before now.
  int recentFailures() const;
  /// Whether `recent` failures are more than the budget allows.
  bool exceeded(int recent) const { return recent > maxRestarts_; }
  int maxRestarts() const { return maxRestarts_; }
  double windowSeconds() const { return windowSeconds_; }
  /// The wait before the restart after `recent` failures.
  static double backoffSeconds(int recent);
  /// Waits `seconds`; false when a signal came first (the launch ends).
  static bool waitBackoff(double seconds);

private:
  int maxRestarts_;
  double windowSeconds_;
  std::vector<std::chrono::steady_clock::time_point> failures_;
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_RESTARTPOLICY_H
