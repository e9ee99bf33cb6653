//===- RankStarter.h - start one rank of the program ------------*- C++ -*-===//
//
// Starts a rank: a process of its own group, its output in pipes, killed
// with its agent (a rank never runs on unsupervised), handed its place in
// the job as one rtxrt::LaunchHandoff, running the program's arguments for
// its round.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_RANKSTARTER_H
#define RTX_TOOLS_RTX_LAUNCH_RANKSTARTER_H

#include "Children.h"
#include "LaunchOptions.h"
#include "Round.h"

#include <string>
#include <vector>

#include <sys/types.h>

namespace rtxlaunch {

class RankStarter {
public:
  explicit RankStarter(const Options &options);

  /// Starts local rank `local` of round `spec` into `child`; in-job
  /// recovery's epoch > 0 starts a replacement, which resumes too. Returns
  /// what failed ("" when it started).
  std::string start(Child &child, const RoundSpec &spec, int local,
                    int64_t epoch) const;

  /// The program's arguments for a round of `world` ranks: "{world}"
  /// becomes the number; a restart (`round` > 0) resumes from the newest
  /// checkpoint. `planned`, the program --replan built for this world,
  /// replaces the first argument that names an executable file: the
  /// program itself, also behind a wrapper such as `sh -c '...' X ./dp2`.
  std::vector<std::string> programLine(int64_t world, int round,
                                       const std::string &planned) const;

private:
  /// In the child, after fork: becomes the rank, or exits 127.
  [[noreturn]] void becomeRank(const RoundSpec &spec, int local, int64_t epoch,
                               int out, int err) const;

  const Options &options_;
  pid_t launcherPid_;
  /// Fault switch RTX_FAULT_LAUNCH_FAIL_FORK_AT=K (rtxrt/core/FaultSwitches.h)
  /// makes the fork of local rank K fail with EAGAIN, as it does when the
  /// process limit is reached.
  int failForkAt_ = -1;
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_RANKSTARTER_H
