//===- LocalRound.h - supervise one round of this node's ranks --*- C++ -*-===//
//
// One round of this node's ranks, from their start to the end of the last
// one: print their lines with the rank in front, reap them, and stop them
// all when one fails, when the round failed on another node, when a signal
// came, or when the job grows. With --recover in-job, a failed rank is
// instead the in-job agent's (InJobAgent) to collect and replace.
//
// Invariants: once stopping, every rank got the stop signal and gets
// SIGKILL after --grace; the first failure decides the round's status; a
// round ends only when every rank exited and its output was printed.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_LOCALROUND_H
#define RTX_TOOLS_RTX_LAUNCH_LOCALROUND_H

#include "Children.h"
#include "LaunchOptions.h"
#include "Round.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {
class Error;
}

namespace rtxlaunch {

class Growth;
class InJobAgent;
class NodeRounds;
class RankStarter;
class RestartPolicy;

class LocalRound {
public:
  /// `rounds` and `growth` are null when the job has no such protocol.
  LocalRound(const Options &options, const RoundSpec &spec,
             const RankStarter &starter, RestartPolicy &policy,
             NodeRounds *rounds, Growth *growth);
  ~LocalRound();

  /// Starts the ranks and supervises them until every one has ended.
  RoundEnd run();

  // What the in-job agent does with the round.
  const RoundSpec &spec() const { return spec_; }
  std::vector<Child> &children() { return children_; }
  /// Starts a replacement of lost local rank `local` in `epoch`; "" when
  /// it started, else what failed (the lost rank counts as replaced).
  std::string replace(int local, int64_t epoch);
  /// Ends the round as a failure of `rank` with `code`: `signal` to every
  /// rank (SIGKILL after --grace), and the restart policy decides.
  void giveUp(int rank, int code, int signal);
  /// The store refused a recovery step: every rank restarts, `rank` named.
  void storeFailed(const rtxrt::Error &error, int rank);
  /// The survivors save their state to shrink the job after `rank` was
  /// lost: the round ends once they have, or after `saveSeconds`.
  void shrink(int rank, int saveSeconds);

private:
  bool startRanks();
  /// Prints whatever the ranks wrote, waiting at most 100 ms for it.
  void pumpOutput();
  void reapRanks();
  void rankFailed(Child &child, int status);
  /// Another node's round failed, or a node is back to join it.
  void watchNodes();
  void forwardSignal();
  /// --grow-after elapsed, or a node offered ranks.
  void watchGrowth();
  bool finished() const;
  RoundEnd end();
  /// `signal` to every rank's process group (and SIGCONT, so that a
  /// stopped one handles it).
  void signalAll(int signal);
  /// Stops every rank: `signal` now, SIGKILL after --grace.
  void stopRanks(int signal);

  const Options &options_;
  RoundSpec spec_;
  const RankStarter &starter_;
  RestartPolicy &policy_;
  NodeRounds *rounds_;
  Growth *growth_;
  std::unique_ptr<InJobAgent> agent_;
  std::vector<Child> children_;
  std::chrono::steady_clock::time_point started_;

  int exitCode_ = 0;
  int failedRank_ = -1;
  bool stopping_ = false;
  bool growing_ = false;
  bool shrinking_ = false;
  bool peerFailed_ = false; ///< the round failed on another node
  int growBy_ = 1;
  std::chrono::steady_clock::time_point stopDeadline_ =
      std::chrono::steady_clock::time_point::max();
  Ticker nodeLook_{std::chrono::milliseconds(250)};
  Ticker offerLook_{std::chrono::milliseconds(250)};
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_LOCALROUND_H
