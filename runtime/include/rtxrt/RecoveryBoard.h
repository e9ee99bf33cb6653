//===- RecoveryBoard.h - the in-job recovery protocol -----------*- C++ -*-===//
//
// In-job recovery (docs/checkpoint.md, "In-job recovery"): when a rank of a
// job dies or hangs, the others keep their processes and their state. Each
// survivor that lost its peers reports it here; rtx-launch (the agent)
// replaces the lost ranks and opens the next epoch; the survivors and the
// replacements then meet in a new rendezvous whose keys carry the epoch,
// so nothing of the old round (a late message, a stale key) reaches the
// new one.
//
// A job that may shrink (rtx-launch --min-ranks) is not healed in place:
// the survivors save the newest state they hold as a checkpoint and end,
// and the smaller world, another program, resumes from it.
//
// The board lives beside the rendezvous store (file:DIR or
// redis://HOST:PORT), in a namespace of the job's run id:
//   epoch-E.lost.R    rank R lost its peers in epoch E: "STEPS ERROR"
//   epoch-E.open      the agent opened epoch E: "WORLD"
//   epoch-E.joined.R  rank R met the others in epoch E and healed
//   epoch-E.shrink    the agent shrinks the job after epoch E: the
//                     survivors, "R1,R2,..."
//   epoch-E.saved.R   survivor R wrote its part: "ok" or "error: WHAT"
// and, under the job's own run id (not a round's), offers of ranks:
//   join.N            the N-th offer (rtx-launch --join K): "K FROM"
//   launch.G          the G-th launch of the job under this run id
//   join.N.taken      a launch of the job grew by it: "HOST:PID"; a later
//                     launch under the same run id does not take it again
// and, for a job of several nodes (one rtx-launch each) that restarts:
//   round-R.node-I    node I's agent started restart round R: "HOST:PID"
//   round-R.failed    round R failed: why (a rank's exit, a node that came
//                     back); every agent stops its ranks and starts R + 1
// and, when such a job shrinks and grows by nodes (rtx-launch --min-nodes):
//   round-R.members   the nodes that run round R: "I1,I2,..." (the first
//                     agent whose wait for the others ended wrote it)
//   round-R.join      a node outside round R's members is back: "I HOST:PID";
//                     the members pre-empt their ranks and start R + 1
//   round-R.ended     the job ended in round R with this exit status; an
//                     agent waiting outside it stops
// and, for in-job recovery across several nodes (under the round's run id):
//   epoch-E.loss      some agent saw a loss in epoch E: every agent collects
//                     its ranks' reports (or kills the silent ones)
//   epoch-E.node-I    node I's agent settled the loss: "SURVIVORS R1,R2,..."
//                     (its running ranks, and its lost ones to replace);
//                     node 0's agent then opens epoch E + 1, or fails the
//                     round
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_RECOVERYBOARD_H
#define RTXRT_RECOVERYBOARD_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

namespace detail {
class KeyBoard;
}

/// What a survivor reported.
struct LostReport {
  int64_t stepsDone = 0;
  std::string error;
};

class RecoveryBoard {
public:
  /// The board of run `run` in `store`; throws rtxrt::Error when the store
  /// is not file:DIR or redis://HOST:PORT, or when this build has no
  /// multi-rank support (Gloo).
  RecoveryBoard(const std::string &store, const std::string &run,
                double timeoutSeconds = 10);
  ~RecoveryBoard();
  RecoveryBoard(const RecoveryBoard &) = delete;
  RecoveryBoard &operator=(const RecoveryBoard &) = delete;

  /// Rank `rank` lost its peers in `epoch` after `stepsDone` steps.
  void reportLost(int64_t epoch, int64_t rank, int64_t stepsDone,
                  const std::string &error);
  std::optional<LostReport> lost(int64_t epoch, int64_t rank);
  /// The agent opens `epoch` for `world` ranks.
  void open(int64_t epoch, int64_t world);
  bool isOpen(int64_t epoch);
  /// After a loss in `epoch`: what the agent decided.
  enum class Decision {
    Replace, ///< it opened epoch + 1 with replacements
    Shrink,  ///< the survivors save their state and end (shrinking())
    None,    ///< nothing within the time, or `cancelled`
  };
  Decision waitDecision(int64_t epoch, double seconds,
                        const std::function<bool()> &cancelled = {});
  /// The agent shrinks the job after a loss in `epoch`; `survivors` are
  /// the ranks still running, ascending.
  void shrink(int64_t epoch, const std::vector<int64_t> &survivors);
  std::optional<std::vector<int64_t>> shrinking(int64_t epoch);
  /// Survivor `rank` wrote its part of the shrink's checkpoint (`error`
  /// empty) or could not.
  void saved(int64_t epoch, int64_t rank, const std::string &error);
  /// What survivor `rank` said: "" (written) or the error; nothing yet.
  std::optional<std::string> savedBy(int64_t epoch, int64_t rank);

  /// A launch of the job under this run id takes the next launch number
  /// (0 for the first): a later launch of the same run id (a second
  /// train call, a restarted launcher) meets in rounds of its own, since a
  /// file store keeps the keys of the earlier launch's rendezvous.
  int64_t claimLaunch(const std::string &by);

  /// A node offers `ranks` more ranks to the job (rtx-launch --join);
  /// `from` names it for a person. Returns the offer's number.
  int64_t offerRanks(int64_t ranks, const std::string &from);
  /// The ranks offered by offer number `n`, once made.
  std::optional<int64_t> offer(int64_t n);
  /// Marks offer `n` taken by `by`, so that it grows the job once, also
  /// across launches of the same run id (a second train call). Returns
  /// false when another launch took it first (atomic in the store).
  bool takeOffer(int64_t n, const std::string &by);
  bool offerTaken(int64_t n);

  /// Several nodes restart together (rtx-launch --nnodes M --max-restarts
  /// R): the agent of node `node` starts restart round `round`.
  void startRound(int64_t round, int64_t node, const std::string &by);
  /// Round `round` failed (`why` names the rank and node, for a person):
  /// every agent stops its ranks and starts the next round. The first
  /// reason written stays.
  void failRound(int64_t round, const std::string &why);
  std::optional<std::string> roundFailure(int64_t round);
  /// The round an agent of node `node` of `nodes` starts in when it
  /// starts (the first launch, or an agent that came back after its node
  /// was lost): the newest round any node started, when its own node has
  /// not started it yet and it has not failed; otherwise the one after it,
  /// and the newest is marked failed so that every node restarts into
  /// that one. 0 for a new job. Marks the round started by `by`.
  int64_t enterRound(int64_t node, int64_t nodes, const std::string &by);

  /// A job that shrinks and grows by nodes (rtx-launch --min-nodes): the
  /// nodes that run round `round`. Waits until every one of `nodes` started
  /// the round (startRound) or `waitSeconds` passed, then claims the nodes
  /// started by then as its members. The first claim stays: an agent whose
  /// wait ended later gets the same list. Empty when `cancelled`.
  std::vector<int64_t> meetNodes(int64_t round, int64_t nodes,
                                 double waitSeconds,
                                 const std::function<bool()> &cancelled = {});
  std::optional<std::vector<int64_t>> roundMembers(int64_t round);
  /// Whether any of `nodes` started round `round`.
  bool roundStarted(int64_t round, int64_t nodes);
  /// Node `node`, back after round `round`'s members were claimed without
  /// it, asks them to take it in (`by` names it for a person); the first
  /// request stays.
  void askToJoin(int64_t round, int64_t node, const std::string &by);
  std::optional<std::string> joinRequest(int64_t round);
  /// The job ended in round `round` with exit status `code`.
  void endJob(int64_t round, int code);
  std::optional<int> jobEnded(int64_t round);

  /// In-job recovery across several nodes: some agent saw a loss in
  /// `epoch` (a death, or a rank's report), and every agent collects.
  void beginLoss(int64_t epoch);
  bool lossBegun(int64_t epoch);
  /// What node `node`'s agent found once its loss was collected.
  struct NodeLoss {
    int64_t survivors = 0;     ///< its ranks still running
    std::vector<int64_t> lost; ///< its ranks to replace (global ranks)
  };
  void settleLoss(int64_t epoch, int64_t node, const NodeLoss &loss);
  std::optional<NodeLoss> settledLoss(int64_t epoch, int64_t node);

  /// Rank `rank` met the others in `epoch` and healed.
  void joined(int64_t epoch, int64_t rank);
  bool hasJoined(int64_t epoch, int64_t rank);

  /// The run id under which epoch `epoch` of run `run` meets (its store
  /// keys and heartbeats): the run's own for epoch 0.
  static std::string epochRun(const std::string &run, int64_t epoch);

private:
  /// The first free number N of `prefix`N, written with `value`.
  int64_t claimNumber(const std::string &prefix, const std::string &value);
  /// The list "1,2,5" under `key`, if set; throws naming `what` (what a
  /// value that is no such list would be) otherwise.
  std::optional<std::vector<int64_t>> readList(const std::string &key,
                                               const std::string &what);

  std::unique_ptr<detail::KeyBoard> board_;
  std::string store_;
};

} // namespace rtxrt

#endif // RTXRT_RECOVERYBOARD_H
