//===- Faults.cpp - test-only fault switches ------------------------------===//

#include "Faults.h"

#include "rtxrt/core/Tensor.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::program;

static double milliseconds(const char *variable, const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v >= 0 && v <= 3.6e6))
    throw Error(std::string(variable) +
                " needs milliseconds in [0, 3600000], got '" + text + "'");
  return v;
}

static Faults readFaults() {
  Faults faults;
  if (const char *delay = std::getenv("RTX_FAULT_COMM_DELAY_MS"))
    faults.commDelayMs = milliseconds("RTX_FAULT_COMM_DELAY_MS", delay);
  if (const char *delay = std::getenv("RTX_FAULT_OFFLOAD_DELAY_MS"))
    faults.offloadDelayMs = milliseconds("RTX_FAULT_OFFLOAD_DELAY_MS", delay);
  if (const char *flip = std::getenv("RTX_FAULT_HEAL_FLIP")) {
    if (std::string(flip) != "0" && std::string(flip) != "1")
      throw Error(std::string("RTX_FAULT_HEAL_FLIP is 0 or 1, got '") + flip +
                  "'");
    faults.healFlip = std::string(flip) == "1";
  }
  if (const char *slow = std::getenv("RTX_FAULT_SLOW_RANK")) {
    std::string text = slow;
    auto colon = text.find(':');
    char *end = nullptr;
    std::string rank = text.substr(0, colon);
    long r = std::strtol(rank.c_str(), &end, 10);
    if (colon == std::string::npos || rank.empty() || *end || r < 0)
      throw Error("RTX_FAULT_SLOW_RANK needs RANK:MILLISECONDS, got '" + text +
                  "'");
    faults.slowRank = r;
    faults.slowRankMs =
        milliseconds("RTX_FAULT_SLOW_RANK", text.substr(colon + 1));
  }
  return faults;
}

const Faults &Faults::get() {
  static const Faults faults = readFaults();
  return faults;
}

void rtxrt::program::sleepMs(double ms) {
  if (ms > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}
