//===- Board.cpp - what the recovery boards share -------------------------===//

#include "Board.h"

#include "rtxrt/core/Tensor.h"

#ifdef RTXRT_HAVE_GLOO
#include "store/KeyBoard.h"
#endif

#include <chrono>

using namespace rtxrt;
using namespace rtxrt::detail;

#ifdef RTXRT_HAVE_GLOO
Board::Board(const std::string &protocol, const std::string &store,
             const std::string &run, double timeoutSeconds)
    : store_(store) {
  keys_ = openKeyBoard(
      store, {"rtx-recover", run},
      std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
  if (!keys_)
    throw Error(protocol + " needs a store file:DIR or redis://HOST:PORT, " +
                "got '" + store + "'");
}
#else
Board::Board(const std::string &protocol, const std::string &,
             const std::string &, double) {
  throw Error(protocol + " needs several ranks, and this build has no " +
              "Gloo (libgloo-dev)");
}
#endif

Board::~Board() = default;

#ifdef RTXRT_HAVE_GLOO
void Board::put(const std::string &key, const std::string &value,
                const std::string &what) {
  if (!keys_->put(key, value))
    throw Error("cannot write into the store " + store_ + " " + what);
}

bool Board::putIfAbsent(const std::string &key, const std::string &value) {
  return keys_->putIfAbsent(key, value);
}

std::optional<std::string> Board::get(const std::string &key) {
  return keys_->get(key);
}
#else
// Unreachable: the constructor threw.
void Board::put(const std::string &, const std::string &, const std::string &) {
}
bool Board::putIfAbsent(const std::string &, const std::string &) {
  return false;
}
std::optional<std::string> Board::get(const std::string &) {
  return std::nullopt;
}
#endif

std::optional<std::vector<int64_t>> Board::readList(const std::string &key,
                                                    const std::string &what) {
  std::optional<std::string> text = get(key);
  if (!text)
    return std::nullopt;
  std::optional<std::vector<int64_t>> numbers = parseList(*text);
  if (!numbers)
    throw Error("the store " + store_ + " holds " + what + ": '" + *text + "'");
  return numbers;
}

std::string rtxrt::detail::listText(const std::vector<int64_t> &numbers) {
  std::string list;
  for (int64_t n : numbers)
    list += (list.empty() ? "" : ",") + std::to_string(n);
  return list;
}

std::optional<std::vector<int64_t>>
rtxrt::detail::parseList(const std::string &text) {
  std::vector<int64_t> numbers;
  for (size_t start = 0; start < text.size();) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos)
      comma = text.size();
    try {
      numbers.push_back(std::stoll(text.substr(start, comma - start)));
    } catch (const std::exception &) {
      return std::nullopt;
    }
    start = comma + 1;
  }
  return numbers;
}
