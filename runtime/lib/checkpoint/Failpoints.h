//===- Failpoints.h - crashes at a save's durability points -----*- C++ -*-===//
//
// RTXRT_CHECKPOINT_CRASH_AT=POINT kills the process with SIGKILL when a save
// reaches POINT (rtxrt/Checkpoint.h lists them), POINT@N only in the save of
// step N (a run that crashes after some checkpoints), so that the chaos suite
// can stop a save at every step of its commit protocol, as a power cut or an
// OOM kill would. Unset, each check is one string comparison.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
#define RTXRT_LIB_CHECKPOINT_FAILPOINTS_H

#include <cstdint>
#include <string>

namespace rtxrt::checkpoint {

/// Kills this process (SIGKILL) when RTXRT_CHECKPOINT_CRASH_AT is `point`,
/// or `point@step`.
void crashPoint(const std::string &point, int64_t step);

} // namespace rtxrt::checkpoint

#endif // RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
