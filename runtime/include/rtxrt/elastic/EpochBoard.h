//===- EpochBoard.h - in-job recovery's epochs over the store ---*- C++ -*-===//
//
// In-job recovery (docs/checkpoint.md, "In-job recovery"): when a rank of a
// job dies or hangs, the others keep their processes and their state. Each
// survivor that lost its peers reports it here; rtx-launch (the agent)
// replaces the lost ranks and opens the next epoch; the survivors and the
// replacements then meet in a new rendezvous whose run id carries the epoch
// (epochRun), so nothing of the old one (a late message, a stale key)
// reaches the new one.
//
// A job that may shrink (rtx-launch --min-ranks) is not healed in place:
// the survivors save the newest state they hold as a checkpoint and end,
// and the smaller world, another program, resumes from it.
//
// With several nodes (one agent each), every agent collects its own ranks'
// part of a loss and settles it here; node 0's agent then opens the next
// epoch for the job, or fails the round (RoundBoard).
//
// The board's keys (epoch_keys below) live beside the rendezvous store
// (file:DIR or redis://HOST:PORT), in the namespace rtx-recover/RUN of the
// round's run id.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_ELASTIC_EPOCHBOARD_H
#define RTXRT_ELASTIC_EPOCHBOARD_H

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

/// The key schema of the in-job recovery protocol, one builder per key.
namespace epoch_keys {
/// Rank R lost its peers in epoch E: "STEPS ERROR".
std::string lost(int64_t epoch, int64_t rank);
/// The agent opened epoch E: "WORLD".
std::string open(int64_t epoch);
/// Rank R met the others in epoch E and healed: "1".
std::string joined(int64_t epoch, int64_t rank);
/// The agent shrinks the job after epoch E: the survivors, "R1,R2,...".
std::string shrink(int64_t epoch);
/// Survivor R wrote its part of the shrink's checkpoint: "ok" or
/// "error: WHAT".
std::string saved(int64_t epoch, int64_t rank);
/// Several nodes: some agent saw a loss in epoch E, every agent collects
/// its ranks' reports (or kills the silent ones): "1".
std::string loss(int64_t epoch);
/// Several nodes: node I's agent settled the loss in epoch E:
/// "SURVIVORS R1,R2,..." (its running ranks, and its lost ones to replace).
std::string node(int64_t epoch, int64_t node);
} // namespace epoch_keys

/// What a survivor reported.
struct LostReport {
  int64_t stepsDone = 0;
  std::string error;
};

/// The one owner of the in-job recovery protocol: the ranks report losses
/// and wait for the agent's decision; the agents (one per node) collect,
/// settle and decide.
class EpochBoard {
public:
  /// The board of run `run` in `store`; throws rtxrt::Error when the store
  /// is not file:DIR or redis://HOST:PORT (or cannot be reached), or when
  /// this build has no multi-rank support (Gloo).
  EpochBoard(const std::string &store, const std::string &run,
             double timeoutSeconds = 10);
  ~EpochBoard();
  EpochBoard(const EpochBoard &) = delete;
  EpochBoard &operator=(const EpochBoard &) = delete;

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

  /// Rank `rank` met the others in `epoch` and healed.
  void joined(int64_t epoch, int64_t rank);
  bool hasJoined(int64_t epoch, int64_t rank);

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

  /// The run id under which epoch `epoch` of run `run` meets (its store
  /// keys and heartbeats): the run's own for epoch 0.
  static std::string epochRun(const std::string &run, int64_t epoch);

private:
  std::unique_ptr<detail::Board> board_;
};

} // namespace rtxrt

#endif // RTXRT_ELASTIC_EPOCHBOARD_H
