//===- RoundBoard.h - restart rounds of a job of several nodes --*- C++ -*-===//
//
// A job of several nodes (one rtx-launch each) restarts together: a round
// that fails on one node ends on every node, and all agents start the next
// round (rtx-launch --nnodes M --max-restarts R). A job that shrinks and
// grows by nodes (rtx-launch --min-nodes K) runs each round on the nodes
// whose agents came in time (its members); a node back later asks them to
// take it in, and they start the next round with it.
//
// The board's keys (round_keys below) live beside the rendezvous store, in
// the namespace rtx-recover/RUN of the job's run id.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_ELASTIC_ROUNDBOARD_H
#define RTXRT_ELASTIC_ROUNDBOARD_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

namespace detail {
class Board;
}

/// The key schema of the restart rounds, one builder per key.
namespace round_keys {
/// Node I's agent started restart round R: "HOST:PID".
std::string node(int64_t round, int64_t node);
/// Round R failed: why (a rank's exit, a node that came back); every agent
/// stops its ranks and starts R + 1. The first reason written stays.
std::string failed(int64_t round);
/// The nodes that run round R: "I1,I2,..." (the first agent whose wait for
/// the others ended wrote it).
std::string members(int64_t round);
/// A node outside round R's members is back: "I HOST:PID"; the members
/// pre-empt their ranks and start R + 1.
std::string join(int64_t round);
/// The job ended in round R with this exit status; an agent waiting
/// outside it stops.
std::string ended(int64_t round);
} // namespace round_keys

/// The one owner of the restart rounds of a job of several nodes.
class RoundBoard {
public:
  /// The board of run `run` in `store`; throws rtxrt::Error when the store
  /// is not file:DIR or redis://HOST:PORT (or cannot be reached), or when
  /// this build has no multi-rank support (Gloo).
  RoundBoard(const std::string &store, const std::string &run,
             double timeoutSeconds = 10);
  ~RoundBoard();
  RoundBoard(const RoundBoard &) = delete;
  RoundBoard &operator=(const RoundBoard &) = delete;

  /// The agent of node `node` starts restart round `round`.
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

private:
  /// The nodes of `nodes` that started round `round`, ascending.
  std::vector<int64_t> startedNodes(int64_t round, int64_t nodes);

  std::unique_ptr<detail::Board> board_;
};

} // namespace rtxrt

#endif // RTXRT_ELASTIC_ROUNDBOARD_H
