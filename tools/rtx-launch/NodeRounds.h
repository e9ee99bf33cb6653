//===- NodeRounds.h - restart rounds across nodes ---------------*- C++ -*-===//
//
// A job of several nodes (one rtx-launch each) that restarts: this node's
// agent in the rounds of the job (rtxrt::RoundBoard). A round that fails on
// one node ends on every node, and all start the next round together. With
// --min-nodes K a round runs on the nodes whose agents came within
// --node-wait (its members; at least K); an agent that came later waits
// outside and asks the members to take it in, and they start the next round
// with it (the node rounds' "shrink and rejoin").
//
// Invariant: every agent of the job enters the round the others are in, or
// fails it so that all start the next one (RoundBoard::enterRound).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_NODEROUNDS_H
#define RTX_TOOLS_RTX_LAUNCH_NODEROUNDS_H

#include "LaunchOptions.h"

#include "rtxrt/elastic/RoundBoard.h"

#include <optional>
#include <string>

namespace rtxlaunch {

/// Where this node sits in a round of a job that shrinks by nodes.
struct Seat {
  enum Kind {
    Member, ///< it runs in the round, as `node` of `nodes`
    Rejoin, ///< it waited outside, the members start the next round with it
    Stop,   ///< the launch ends with `exitCode`
  } kind = Member;
  int64_t node = 0, nodes = 1;
  int exitCode = 0;
  /// Whether this node is one of the round's members, once known (the
  /// node that merges the traces must have run in the last round).
  std::optional<bool> member;
};

class NodeRounds {
public:
  /// Throws rtxrt::Error when the store is out of reach or of no kind the
  /// board knows.
  NodeRounds(const Options &options, const std::string &runId,
             int64_t agentNode, int64_t agentNodes);

  /// The round this agent starts in (the others', or the next one when its
  /// node came back after running in theirs); -1 after an error, printed.
  int enter(const std::string &runId);
  /// This agent starts `round` (a restart after the first).
  void start(int round);
  /// A job that shrinks by nodes (--min-nodes): the members of `round`,
  /// and this node's seat among them (its ranks run `ranks` per node).
  Seat meet(int round, int ranks);
  /// Every agent stops its ranks and starts the round after `round`; the
  /// first reason written stays. A store error is a warning.
  void fail(int round, const std::string &why);
  /// Why `round` failed, if it did (nothing while the store is out).
  std::optional<std::string> failure(int round);
  /// A job that shrank by nodes: the node that asked to be taken back into
  /// `round`, run on `roundNodes` of the job's nodes, if one has.
  std::optional<std::string> nodeBack(int round, int64_t roundNodes);
  /// The job ended in `round` with `code`: an agent outside it stops.
  void end(int round, int code);

  int64_t agentNode() const { return agentNode_; }

private:
  /// An agent outside `round`'s members (`list`) asks them to take it in,
  /// and waits: -1 once they start the next round, else its exit status.
  int waitOutside(int round, const std::string &list);

  const Options &options_;
  rtxrt::RoundBoard board_;
  /// The agent's own node and the job's nodes, its name in the store (a
  /// round's node and nodes differ when the job shrank).
  int64_t agentNode_, agentNodes_;
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_NODEROUNDS_H
