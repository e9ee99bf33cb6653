//===- RestartPolicy.cpp - the restart budget -----------------------------===//

#include "RestartPolicy.h"

#include "LauncherProcess.h"

#include <algorithm>
#include <cstdint>

#include <unistd.h>

using namespace rtxlaunch;

int RestartPolicy::recordFailure() {
  failures_.push_back(std::chrono::steady_clock::now());
  return recentFailures();
}

int RestartPolicy::recentFailures() const {
  auto now = std::chrono::steady_clock::now();
  auto window =
      std::chrono::milliseconds(static_cast<int64_t>(windowSeconds_ * 1000));
  int recent = 0;
  for (auto t : failures_)
    recent += now - t <= window;
  return recent;
}

double RestartPolicy::backoffSeconds(int recent) {
  return std::min(8.0, 0.5 * double(1 << std::min(recent - 1, 4)));
}

bool RestartPolicy::waitBackoff(double seconds) {
  for (double waited = 0; waited < seconds && !forwardedSignal();
       waited += 0.05)
    usleep(50000);
  return !forwardedSignal();
}
