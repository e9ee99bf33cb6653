//===- Failpoints.h - crashes at a save's durability points -----*- C++ -*-===//
//
// RTXRT_CHECKPOINT_CRASH_AT=POINT kills the process with SIGKILL when a save
// reaches POINT (rtxrt/Checkpoint.h lists them), so that the chaos suite can
// stop a save at every step of its commit protocol, as a power cut or an
// OOM kill would. Unset, each check is one string comparison.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
#define RTXRT_LIB_CHECKPOINT_FAILPOINTS_H

#include <string>

namespace rtxrt::checkpoint {

/// Kills this process (SIGKILL) when RTXRT_CHECKPOINT_CRASH_AT equals `point`.
void crashPoint(const std::string &point);

} // namespace rtxrt::checkpoint

#endif // RTXRT_LIB_CHECKPOINT_FAILPOINTS_H
