//===- StepTimeout.cpp - collective timeouts sized to the step time -------===//

#include "StepTimeout.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace rtxrt::program;

StepTimeout::StepTimeout(bool automatic, double fixedSeconds,
                         double rendezvousSeconds)
    : automatic_(automatic), fixed_(fixedSeconds),
      rendezvous_(automatic ? rendezvousSeconds
                            : std::max(rendezvousSeconds, fixedSeconds)),
      current_(rendezvous_) {}

void StepTimeout::start(std::function<void(double)> apply) {
  apply_ = std::move(apply);
  current_ = 0; // applied below whatever it was
  set(automatic_ ? rendezvous_ : fixed_);
}

double StepTimeout::sized(const std::deque<double> &times) {
  std::vector<double> sorted(times.begin(), times.end());
  std::sort(sorted.begin(), sorted.end());
  // The nearest-rank p99: with fewer than 100 times, the largest.
  size_t index = static_cast<size_t>(
                     std::ceil(0.99 * static_cast<double>(sorted.size()))) -
                 1;
  double p99 = sorted.empty() ? 0 : sorted[std::min(index, sorted.size() - 1)];
  return std::clamp(kMultiple * p99, kFloorSeconds, kCeilingSeconds);
}

double StepTimeout::observe(double stepSeconds) {
  if (!automatic_)
    return current_;
  times_.push_back(stepSeconds);
  if (times_.size() > kWindow)
    times_.pop_front();
  if (static_cast<int64_t>(times_.size()) >= kWarmupSteps)
    set(sized(times_));
  return current_;
}

void StepTimeout::relax() { set(std::max(current_, rendezvous_)); }

void StepTimeout::set(double seconds) {
  if (seconds == current_)
    return;
  current_ = seconds;
  if (apply_)
    apply_(seconds);
}
