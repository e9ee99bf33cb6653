//===- LauncherProcess.h - rtx-launch's own process -------------*- C++ -*-===//
//
// What belongs to the launcher's process rather than to any one part: the
// signal it forwards to its ranks (a handler can only set a flag) and the
// name the store's entries give it.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_LAUNCHERPROCESS_H
#define RTX_TOOLS_RTX_LAUNCH_LAUNCHERPROCESS_H

#include <string>

namespace rtxlaunch {

/// SIGINT and SIGTERM sent to rtx-launch are recorded, to be forwarded to
/// every rank by the part that supervises them.
void forwardSignals();
/// The signal received, or 0.
int forwardedSignal();

/// "HOST:PID": this launch, as the store's entries name it for a person.
std::string launcherName();

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_LAUNCHERPROCESS_H
