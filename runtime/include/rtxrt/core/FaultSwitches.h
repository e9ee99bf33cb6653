//===- FaultSwitches.h - the test-only fault switches -----------*- C++ -*-===//
//
// Tests make a run fail or slow down in a known way through environment
// variables named RTX_FAULT_*: a slow link, a straggler, a crash at a
// durability point of a save, a full disk, a fork that fails. Every switch is
// declared once, in the table of FaultSwitches.cpp (its name, what it
// injects, its value, and the code that reads it), and read through it, so
// that the code, docs/testing.md ("Fault switches") and the tests name the
// same variables. Nothing but a test sets them.
//
// They live in core because checkpoint, comm, program and rtx-launch all read
// them; this depends on the standard library and rtxrt::Error only.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_CORE_FAULTSWITCHES_H
#define RTXRT_CORE_FAULTSWITCHES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

/// One per row of the table, in its order.
enum class FaultSwitch {
  CommDelayMs,
  SlowRank,
  OffloadDelayMs,
  HealFlip,
  CheckpointCrashAt,
  FailWriteAfterBytes,
  LaunchFailForkAt,
};

/// A row of the table.
struct FaultSwitchInfo {
  FaultSwitch id;
  const char *name;     ///< the environment variable, RTX_FAULT_*
  const char *injects;  ///< what it makes happen
  const char *format;   ///< the value it takes
  const char *readBy;   ///< the code that reads it
  const char *formerly; ///< the name it had before the table, or nullptr
};

/// Every switch, in the order of FaultSwitch.
const std::vector<FaultSwitchInfo> &faultSwitches();
const FaultSwitchInfo &faultSwitchInfo(FaultSwitch fault);

/// The value of `fault`'s variable; nullopt when unset. Read at each call:
/// a test may arm a switch in a forked child. The first call in a process
/// warns on stderr about each variable of the environment that looks like
/// a switch but is not one (undeclaredFaultSwitches).
std::optional<std::string> faultValue(FaultSwitch fault);

/// Typed reads. Each throws Error naming the variable when its value is
/// malformed, so that a test's typo never passes as "no fault".
/// Milliseconds in [0, 3600000]; 0 when unset.
double faultMilliseconds(FaultSwitch fault);
/// A whole number >= 0; -1 when unset.
int64_t faultCount(FaultSwitch fault);
/// 0 or 1; false when unset.
bool faultFlag(FaultSwitch fault);
/// RANK:MILLISECONDS; rank -1 when unset.
struct RankDelay {
  int64_t rank = -1;
  double ms = 0;
};
RankDelay faultRankDelay(FaultSwitch fault);

/// The variables of `environment` (NAME=VALUE entries, null-terminated)
/// that name no switch: an RTX_FAULT_* the table lacks, or a switch's former
/// name, which is ignored now. One line each, saying which.
std::vector<std::string> undeclaredFaultSwitches(char **environment);

} // namespace rtxrt

#endif // RTXRT_CORE_FAULTSWITCHES_H
