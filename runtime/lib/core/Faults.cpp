//===- Faults.cpp - test-only fault switches ------------------------------===//

#include "Faults.h"

#include "rtxrt/core/FaultSwitches.h"

#include <chrono>
#include <thread>

using namespace rtxrt;

static Faults readFaults() {
  Faults faults;
  faults.commDelayMs = faultMilliseconds(FaultSwitch::CommDelayMs);
  faults.offloadDelayMs = faultMilliseconds(FaultSwitch::OffloadDelayMs);
  faults.healFlip = faultFlag(FaultSwitch::HealFlip);
  RankDelay slow = faultRankDelay(FaultSwitch::SlowRank);
  faults.slowRank = slow.rank;
  faults.slowRankMs = slow.ms;
  return faults;
}

const Faults &Faults::get() {
  static const Faults faults = readFaults();
  return faults;
}

void rtxrt::sleepMs(double ms) {
  if (ms > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}
