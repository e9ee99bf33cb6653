//===- InJobAgent.h - in-job recovery's agent on this node ------*- C++ -*-===//
//
// --recover in-job (docs/checkpoint.md, "In-job recovery"): when a rank
// dies or hangs, the others keep their processes and state. Once a rank
// died or a survivor reported a lost peer (rtxrt::EpochBoard), every other
// running rank has --recover-window seconds to report too (a stopped one
// cannot: it counts as lost at once); those that did not are killed. Then
// the agent opens the next epoch and replaces the lost ranks, or shrinks the
// job (--min-ranks), or, with no survivor or no rank lost, every rank
// restarts as without in-job recovery.
//
// On several nodes each agent collects its own ranks' part of the loss and
// settles it in the store; node 0's agent decides for the job once every
// node has, and each agent replaces its own lost ranks once the next epoch
// is open. A node that does not settle in time (lost with its agent), or no
// decision in time (node 0 lost), fails the round: every rank of every node
// restarts from the newest checkpoint.
//
// Invariant: an epoch opens only once every running rank has reported or
// been killed, so no survivor waits in a rendezvous for a rank that will
// not come.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_INJOBAGENT_H
#define RTX_TOOLS_RTX_LAUNCH_INJOBAGENT_H

#include "Children.h"
#include "LaunchOptions.h"

#include "rtxrt/elastic/EpochBoard.h"

#include <chrono>
#include <string>
#include <vector>

namespace rtxlaunch {

class LocalRound;
class RestartPolicy;

class InJobAgent {
public:
  /// The agent of `round`'s ranks; throws rtxrt::Error when the store is
  /// out of reach.
  InJobAgent(const Options &options, LocalRound &round, RestartPolicy &policy);

  /// Rank `child` failed with `code` (`what` says how): a loss to collect,
  /// or, before the epoch's rendezvous met, every rank restarts.
  void rankFailed(Child &child, int code, const std::string &what);
  /// One look at the reports, the window and the other nodes' settlements.
  void collectLoss();
  /// Whether every rank met in the current epoch (epoch 0: the first
  /// rendezvous, which fails as without in-job recovery).
  bool epochJoined();
  /// A loss is being collected (no growth meanwhile).
  bool collecting() const { return collecting_; }
  /// This node settled its part and waits for node 0's decision.
  bool settled() const { return settled_; }

private:
  /// The first sign of a loss opens the window in which the other running
  /// ranks report.
  void startCollecting();
  /// The running ranks that have not reported (yet), read once.
  struct Reports {
    std::vector<Child *> silent;
    int running = 0;
    bool waiting = false; ///< a silent one may still report
  };
  Reports readReports();
  void killSilent(const std::vector<Child *> &silent);
  /// One node: replace the lost ranks in a new epoch, shrink, or give up.
  void decide(int survivors, const std::vector<int> &lost, int firstLost);
  void shrink(int survivors, int firstLost, int recent);
  /// Several nodes: write this node's part of the loss.
  void settle(int survivors, const std::vector<int> &lost, int firstLost);
  /// Several nodes: node 0 decides once all have settled; every agent
  /// replaces its lost ranks once the next epoch is open.
  void awaitDecision();
  /// Node 0's decision over every node's settlement; false when it gave up
  /// or could not write it.
  bool openForEveryNode(int64_t survivorsAll, int64_t lostAll);
  /// Starts replacements for this node's `lost` local ranks in the
  /// (already opened) current epoch.
  void replaceLost(const std::vector<int> &lost, int survivors, int recent);

  const Options &options_;
  LocalRound &round_;
  RestartPolicy &policy_;
  rtxrt::EpochBoard board_;
  int64_t epoch_ = 0;
  bool collecting_ = false;
  /// While a loss is being collected: until when survivors may report.
  std::chrono::steady_clock::time_point reportDeadline_ =
      std::chrono::steady_clock::time_point::max();
  /// Several nodes: this node's settled part, until the decision.
  bool settled_ = false;
  std::vector<int> settledLost_; ///< this node's lost local ranks
  int settledFirst_ = -1;        ///< a rank to name when giving up
  std::chrono::steady_clock::time_point decideBy_ =
      std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point nextLossLook_ =
      std::chrono::steady_clock::now();
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_INJOBAGENT_H
