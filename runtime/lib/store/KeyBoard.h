//===- KeyBoard.h - small named values beside the store ---------*- C++ -*-===//
//
// Private to librtxrt. Gloo's stores can only add keys and wait for them;
// heartbeats (Liveness.h) and the in-job recovery protocol
// (rtxrt/elastic/*Board.h) need values that are overwritten and read without
// waiting. A board keeps them beside the store, in a namespace of its own:
// files DIR/SPACE[0]/SPACE[1]/.../NAME for file:DIR (written aside and
// renamed, so a reader never sees half a value), keys
// SPACE[0]:SPACE[1]:...:NAME for redis://HOST:PORT.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMM_KEYBOARD_H
#define RTXRT_LIB_COMM_KEYBOARD_H

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt::detail {

class KeyBoard {
public:
  virtual ~KeyBoard() = default;
  /// Sets `name` to `value`; returns false when it could not be written
  /// (a file board's disk; a Redis board throws rtxrt::Error instead).
  virtual bool put(const std::string &name, const std::string &value) = 0;
  /// Sets `name` to `value` only when no writer has set it yet, atomically
  /// among all writers of the store: returns whether this call set it.
  /// Throws rtxrt::Error when it could not be written.
  virtual bool putIfAbsent(const std::string &name,
                           const std::string &value) = 0;
  /// The value of `name`, if set.
  virtual std::optional<std::string> get(const std::string &name) = 0;
};

/// The board of `store` (file:DIR or redis://HOST:PORT) in namespace
/// `space`; null for any other spec. Redis commands time out after
/// `timeout`.
std::unique_ptr<KeyBoard> openKeyBoard(const std::string &store,
                                       const std::vector<std::string> &space,
                                       std::chrono::milliseconds timeout);

} // namespace rtxrt::detail

#endif // RTXRT_LIB_COMM_KEYBOARD_H
