//===- Board.h - what the recovery boards share -----------------*- C++ -*-===//
//
// Private to librtxrt's elastic layer. The three boards (EpochBoard,
// GrowthBoard, RoundBoard) each own one protocol over the store; they share
// its namespace, "rtx-recover/RUN" beside the rendezvous store, and the few
// operations every protocol needs: write or fail naming the store, claim
// the first free number of a key, read a list of numbers.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_ELASTIC_BOARD_H
#define RTXRT_LIB_ELASTIC_BOARD_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt::detail {

class KeyBoard;

/// The key board of run `run` in `store`, with the store's name for
/// messages. Throws rtxrt::Error naming `protocol` when the store is not
/// file:DIR or redis://HOST:PORT, or when this build has no Gloo.
class Board {
public:
  Board(const std::string &protocol, const std::string &store,
        const std::string &run, double timeoutSeconds);
  ~Board();
  Board(const Board &) = delete;
  Board &operator=(const Board &) = delete;

  /// Sets `key` to `value`; throws rtxrt::Error "cannot write into the
  /// store STORE WHAT" when it could not.
  void put(const std::string &key, const std::string &value,
           const std::string &what);
  bool putIfAbsent(const std::string &key, const std::string &value);
  std::optional<std::string> get(const std::string &key);
  bool has(const std::string &key) { return get(key).has_value(); }

  /// The first free number N of the keys `keyOf(N)`, written with `value`;
  /// two writers at once take two (putIfAbsent is atomic in the store).
  template <typename KeyOf>
  int64_t claimNumber(KeyOf keyOf, const std::string &value) {
    for (int64_t n = 0;; ++n) {
      std::string key = keyOf(n);
      if (has(key))
        continue;
      if (putIfAbsent(key, value))
        return n;
    }
  }

  /// The list "1,2,5" under `key`, if set; throws naming `what` (what a
  /// value that is no such list would be) otherwise.
  std::optional<std::vector<int64_t>> readList(const std::string &key,
                                               const std::string &what);

  const std::string &store() const { return store_; }

private:
  std::unique_ptr<KeyBoard> keys_;
  std::string store_;
};

/// "1,2,5" for {1, 2, 5}.
std::string listText(const std::vector<int64_t> &numbers);
/// {1, 2, 5} for "1,2,5"; nothing when it is no such list.
std::optional<std::vector<int64_t>> parseList(const std::string &text);

} // namespace rtxrt::detail

#endif // RTXRT_LIB_ELASTIC_BOARD_H
