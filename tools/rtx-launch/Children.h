//===- Children.h - the ranks rtx-launch supervises -------------*- C++ -*-===//
//
// A started rank (its process, its output pipes) and what rtx-launch does
// with them: print their lines with the rank in front, tell whether a rank
// is stopped, stop the ranks already started, keep a failed round's traces.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_CHILDREN_H
#define RTX_TOOLS_RTX_LAUNCH_CHILDREN_H

#include <cstdio>
#include <string>
#include <vector>

#include <sys/types.h>

namespace rtxlaunch {

struct Child {
  pid_t pid = -1;
  int rank = 0, local = 0;
  /// In-job recovery lost it (died, or hung and killed); `replaced` once a
  /// replacement runs in its place (a later entry).
  bool lost = false, replaced = false;
  int out = -1, err = -1;
  std::string outBuffer, errBuffer;
  bool exited = false;
  int status = 0;
};

/// Prints complete lines of `buffer` prefixed with the rank (all of it,
/// the last line unfinished too, with `all`).
void flushLines(std::string &buffer, int rank, FILE *stream, bool all);

/// Whether process `pid` is stopped (SIGSTOP, a debugger): it cannot
/// answer anything until continued.
bool isStopped(pid_t pid);

/// Stops ranks started before a launch failed: SIGTERM to each one's
/// process group, SIGKILL after `graceSeconds`, and reaps them.
void stopStarted(std::vector<Child> &children, double graceSeconds);

/// Moves the traces and per-rank metrics a round left in DIR into
/// DIR/round-K, so that the next round does not overwrite them.
void archiveRoundTraces(const std::string &dir, int round);

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_CHILDREN_H
