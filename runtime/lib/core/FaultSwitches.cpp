//===- FaultSwitches.cpp - the test-only fault switches -------------------===//
//
// The table below is the one list of fault switches; docs/testing.md
// ("Fault switches") documents it row by row.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/FaultSwitches.h"

#include "rtxrt/core/Tensor.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

using namespace rtxrt;

static const char kPrefix[] = "RTX_FAULT_";

const std::vector<FaultSwitchInfo> &rtxrt::faultSwitches() {
  static const std::vector<FaultSwitchInfo> table = {
      {FaultSwitch::CommDelayMs, "RTX_FAULT_COMM_DELAY_MS",
       "every collective of the host communicator waits MS ms first: a slow "
       "link",
       "MS, milliseconds in [0, 3600000]", "comm/Communicator.cpp", nullptr},
      {FaultSwitch::SlowRank, "RTX_FAULT_SLOW_RANK",
       "rank R computes MS ms longer in every step: a straggler (its trace "
       "shows 'injected delay (RTX_FAULT_SLOW_RANK)')",
       "R:MS, a rank and milliseconds", "program/StepLoop.cpp", nullptr},
      {FaultSwitch::OffloadDelayMs, "RTX_FAULT_OFFLOAD_DELAY_MS",
       "every read and write of the offload tier takes at least MS ms: a "
       "slow disk",
       "MS, milliseconds in [0, 3600000]", "program/Offload.cpp", nullptr},
      {FaultSwitch::HealFlip, "RTX_FAULT_HEAL_FLIP",
       "in-job recovery: a healed rank flips a bit of the first piece of "
       "state it receives, a transfer corrupted without an error",
       "0 or 1", "program/InJobRecovery.cpp", nullptr},
      {FaultSwitch::CheckpointCrashAt, "RTX_FAULT_CHECKPOINT_CRASH_AT",
       "SIGKILL when a save reaches a durability point "
       "(rtxrt/checkpoint/Checkpoint.h "
       "lists them; resume-read: a resume reading a chunk), as a power cut "
       "or an OOM kill would",
       "POINT, POINT@STEP, POINT/ROUND or POINT@STEP/ROUND (ROUND: "
       "RTX_RESTART_ROUND), comma-separated",
       "checkpoint/Failpoints.cpp", "RTXRT_CHECKPOINT_CRASH_AT"},
      {FaultSwitch::FailWriteAfterBytes, "RTX_FAULT_FAIL_WRITE_AFTER_BYTES",
       "a checkpoint or --save-state write fails with ENOSPC once N bytes "
       "were written by the save: a full disk",
       "N, bytes >= 0", "checkpoint/DurableFiles.cpp",
       "RTXRT_FAIL_WRITE_AFTER_BYTES"},
      {FaultSwitch::LaunchFailForkAt, "RTX_FAULT_LAUNCH_FAIL_FORK_AT",
       "rtx-launch's fork of local rank K fails with EAGAIN, as it does at "
       "the process limit",
       "K, a local rank >= 0", "tools/rtx-launch", "RTX_LAUNCH_FAIL_FORK_AT"},
  };
  return table;
}

const FaultSwitchInfo &rtxrt::faultSwitchInfo(FaultSwitch fault) {
  return faultSwitches()[static_cast<size_t>(fault)];
}

std::vector<std::string> rtxrt::undeclaredFaultSwitches(char **environment) {
  std::vector<std::string> found;
  for (char **entry = environment; entry && *entry; ++entry) {
    std::string name(*entry, std::strcspn(*entry, "="));
    bool declared = false;
    for (const FaultSwitchInfo &row : faultSwitches()) {
      if (name == row.name)
        declared = true;
      else if (row.formerly && name == row.formerly)
        found.push_back(name + " is now " + row.name +
                        "; the old name is "
                        "ignored");
    }
    if (!declared && name.rfind(kPrefix, 0) == 0)
      found.push_back(name + " is not a fault switch (docs/testing.md lists "
                             "them); it is ignored");
  }
  return found;
}

std::optional<std::string> rtxrt::faultValue(FaultSwitch fault) {
  // Once per process: a misspelt switch would otherwise inject nothing, and
  // the test that set it would pass for the wrong reason.
  static const bool warned = [] {
    for (const std::string &line : undeclaredFaultSwitches(environ))
      std::fprintf(stderr, "rtxrt: warning: %s\n", line.c_str());
    return true;
  }();
  (void)warned;
  if (const char *value = std::getenv(faultSwitchInfo(fault).name))
    return std::string(value);
  return std::nullopt;
}

// MS in [0, 3600000] (an hour: longer is a hang, not a delay).
static double parseMilliseconds(const char *name, const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v >= 0 && v <= 3.6e6))
    throw Error(std::string(name) +
                " needs milliseconds in [0, 3600000], got '" + text + "'");
  return v;
}

double rtxrt::faultMilliseconds(FaultSwitch fault) {
  std::optional<std::string> value = faultValue(fault);
  return value ? parseMilliseconds(faultSwitchInfo(fault).name, *value) : 0;
}

int64_t rtxrt::faultCount(FaultSwitch fault) {
  std::optional<std::string> value = faultValue(fault);
  if (!value)
    return -1;
  char *end = nullptr;
  long long n = std::strtoll(value->c_str(), &end, 10);
  if (value->empty() || *end || n < 0)
    throw Error(std::string(faultSwitchInfo(fault).name) +
                " needs a whole number >= 0, got '" + *value + "'");
  return n;
}

bool rtxrt::faultFlag(FaultSwitch fault) {
  std::optional<std::string> value = faultValue(fault);
  if (value && *value != "0" && *value != "1")
    throw Error(std::string(faultSwitchInfo(fault).name) + " is 0 or 1, got '" +
                *value + "'");
  return value && *value == "1";
}

RankDelay rtxrt::faultRankDelay(FaultSwitch fault) {
  std::optional<std::string> value = faultValue(fault);
  if (!value)
    return {};
  const char *name = faultSwitchInfo(fault).name;
  size_t colon = value->find(':');
  std::string rank = value->substr(0, colon);
  char *end = nullptr;
  long r = std::strtol(rank.c_str(), &end, 10);
  if (colon == std::string::npos || rank.empty() || *end || r < 0)
    throw Error(std::string(name) + " needs RANK:MILLISECONDS, got '" + *value +
                "'");
  return {r, parseMilliseconds(name, value->substr(colon + 1))};
}
