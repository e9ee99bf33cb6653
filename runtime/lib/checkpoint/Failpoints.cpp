//===- Failpoints.cpp - crashes at a save's durability points -------------===//

#include "Failpoints.h"

#include "rtxrt/core/FaultSwitches.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {
/// Whether one armed item, POINT[@STEP][/ROUND], names `point` in the save
/// of `step` in restart round `round` (RTX_RESTART_ROUND, 0 without).
bool matches(const std::string &item, const std::string &point, int64_t step,
             const std::string &round) {
  std::string rest = item;
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.substr(slash + 1) != round)
      return false;
    rest.resize(slash);
  }
  if (auto at = rest.find('@'); at != std::string::npos) {
    if (rest.substr(at + 1) != std::to_string(step))
      return false;
    rest.resize(at);
  }
  return rest == point;
}
} // namespace

void rtxrt::checkpoint::crashPoint(const std::string &point, int64_t step) {
  // Read each time (not cached): a test arms it in a forked child.
  std::optional<std::string> armed =
      rtxrt::faultValue(rtxrt::FaultSwitch::CheckpointCrashAt);
  if (!armed)
    return;
  const char *roundVariable = std::getenv("RTX_RESTART_ROUND");
  std::string round = roundVariable && *roundVariable ? roundVariable : "0";
  const std::string &list = *armed;
  bool hit = false;
  for (size_t start = 0; start <= list.size() && !hit;) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    hit = matches(item, point, step, round);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (!hit)
    return;
  std::fprintf(stderr, "rtxrt: failpoint %s: killing this process\n",
               point.c_str());
  std::fflush(stderr);
  kill(getpid(), SIGKILL);
  _exit(137); // not reached
}
