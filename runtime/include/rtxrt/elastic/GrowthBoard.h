//===- GrowthBoard.h - offers of ranks to a running job ---------*- C++ -*-===//
//
// A job that may grow (rtx-launch --max-ranks) takes ranks that other nodes
// offer (rtx-launch --join K): the offer is written here, and a launch of
// the job takes it once, pre-empting its ranks at a step boundary to start
// again with more. The launches of one run id are numbered here too: a
// later launch (a second train call, a restarted launcher) meets in rounds
// of its own, since a file store keeps the keys of the earlier launch's
// rendezvous.
//
// The board's keys (growth_keys below) live beside the rendezvous store, in
// the namespace rtx-recover/RUN of the job's own run id (not a round's), so
// that every launch and every round of the job sees the same offers.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_ELASTIC_GROWTHBOARD_H
#define RTXRT_ELASTIC_GROWTHBOARD_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rtxrt {

namespace detail {
class Board;
}

/// The key schema of the growth protocol, one builder per key.
namespace growth_keys {
/// The N-th offer of ranks (rtx-launch --join K): "K FROM".
std::string offer(int64_t n);
/// A launch of the job grew by offer N: "HOST:PID"; a later launch under
/// the same run id does not take it again.
std::string taken(int64_t n);
/// The G-th launch of the job under this run id: "HOST:PID".
std::string launch(int64_t g);
} // namespace growth_keys

/// The one owner of the growth protocol: nodes offer ranks, launches take
/// each offer once.
class GrowthBoard {
public:
  /// The board of run `run` in `store`; throws rtxrt::Error when the store
  /// is not file:DIR or redis://HOST:PORT (or cannot be reached), or when
  /// this build has no multi-rank support (Gloo).
  GrowthBoard(const std::string &store, const std::string &run,
              double timeoutSeconds = 10);
  ~GrowthBoard();
  GrowthBoard(const GrowthBoard &) = delete;
  GrowthBoard &operator=(const GrowthBoard &) = delete;

  /// A launch of the job under this run id takes the next launch number
  /// (0 for the first).
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

private:
  std::unique_ptr<detail::Board> board_;
};

} // namespace rtxrt

#endif // RTXRT_ELASTIC_GROWTHBOARD_H
