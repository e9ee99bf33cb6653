//===- Round.h - one round of this node's ranks, as data --------*- C++ -*-===//
//
// A round is one start of this node's ranks: the first, or a restart after
// a failure, a shrink or a growth. RoundSpec is where its ranks stand in the
// job; RoundEnd is how it ended, which the restart policy (Launcher) reads.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_ROUND_H
#define RTX_TOOLS_RTX_LAUNCH_ROUND_H

#include <chrono>
#include <cstdint>
#include <string>

namespace rtxlaunch {

struct RoundSpec {
  int ranks = 0; ///< this node's ranks
  int round = 0; ///< the restart round
  /// This node among the round's nodes (a job that shrinks by nodes numbers
  /// a round's members 0, 1, ... in their order).
  int64_t node = 0, nodes = 1;
  std::string runId;     ///< the round's run id (its store keys)
  std::string planned;   ///< the program --replan built for this world
  double growAfter = -1; ///< seconds before growing back; < 0: never
  int64_t world() const { return int64_t(ranks) * nodes; }
  int rankOf(int local) const { return static_cast<int>(node * ranks + local); }
};

struct RoundEnd {
  int exitCode = 0;
  bool rankFailed = false; ///< a rank failed (not a forwarded signal)
  bool grew = false;       ///< pre-empted to grow, every rank exited 0
  int grewBy = 0;          ///< ... by this many ranks (0: a node is back)
  bool shrunk = false;     ///< in-job: the survivors saved to shrink
};

/// A look at the store at most every `period`: the supervision loop turns
/// every 100 ms, the store need not be read that often.
class Ticker {
public:
  explicit Ticker(std::chrono::milliseconds period) : period_(period) {}
  bool due() {
    auto now = std::chrono::steady_clock::now();
    if (now < next_)
      return false;
    next_ = now + period_;
    return true;
  }

private:
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point next_ =
      std::chrono::steady_clock::now();
};

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_ROUND_H
