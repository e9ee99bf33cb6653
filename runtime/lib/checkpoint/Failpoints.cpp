//===- Failpoints.cpp - crashes at a save's durability points -------------===//

#include "Failpoints.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

void rtxrt::checkpoint::crashPoint(const std::string &point, int64_t step) {
  // Read each time (not cached): a test arms it in a forked child.
  const char *armed = std::getenv("RTXRT_CHECKPOINT_CRASH_AT");
  if (!armed || (point != armed && point + "@" + std::to_string(step) != armed))
    return;
  std::fprintf(stderr, "rtxrt: failpoint %s: killing this process\n",
               point.c_str());
  std::fflush(stderr);
  kill(getpid(), SIGKILL);
  _exit(137); // not reached
}
