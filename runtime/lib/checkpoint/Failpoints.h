//===- Failpoints.h - crashes at a save's durability points -----*- C++ -*-===//
//
// RTX_FAULT_CHECKPOINT_CRASH_AT=POINT (a fault switch,
// rtxrt/core/FaultSwitches.h) kills the process with SIGKILL when a save
// reaches POINT (rtxrt/checkpoint/Checkpoint.h lists them; "resume-read" is a resume
// reading a chunk), POINT@N only in the save (or resume) of step N, POINT/K
// only in restart round K (RTX_RESTART_ROUND), and a comma-separated list
// arms several, so that the chaos suite can stop a save at every step of its
// commit protocol, as a power cut or an OOM kill would, or a recovery half
// way. Unset, each check is one getenv.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
#define RTXRT_LIB_CHECKPOINT_FAILPOINTS_H

#include <cstdint>
#include <string>

namespace rtxrt::checkpoint {

/// Kills this process (SIGKILL) when RTX_FAULT_CHECKPOINT_CRASH_AT arms `point`
/// (`point`, `point@step`, `point/round`, `point@step/round`, in a list).
void crashPoint(const std::string &point, int64_t step);

} // namespace rtxrt::checkpoint

#endif // RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
