//===- RecoveryBoard.cpp - the in-job recovery protocol's store keys ------===//

#include "rtxrt/RecoveryBoard.h"

#include "rtxrt/core/Tensor.h"

#ifdef RTXRT_HAVE_GLOO
#include "store/KeyBoard.h"
#endif

#include <algorithm>
#include <chrono>
#include <thread>

using namespace rtxrt;

#ifdef RTXRT_HAVE_GLOO
RecoveryBoard::RecoveryBoard(const std::string &store, const std::string &run,
                             double timeoutSeconds)
    : store_(store) {
  board_ = detail::openKeyBoard(
      store, {"rtx-recover", run},
      std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000)));
  if (!board_)
    throw Error("in-job recovery needs a store file:DIR or redis://HOST:PORT, "
                "got '" +
                store + "'");
}
#else
RecoveryBoard::RecoveryBoard(const std::string &, const std::string &, double) {
  throw Error("in-job recovery needs several ranks, and this build has no "
              "Gloo (libgloo-dev)");
}
#endif

RecoveryBoard::~RecoveryBoard() = default;

static std::string epochKey(int64_t epoch, const std::string &rest) {
  return "epoch-" + std::to_string(epoch) + "." + rest;
}

void RecoveryBoard::reportLost(int64_t epoch, int64_t rank, int64_t stepsDone,
                               const std::string &error) {
  if (!board_->put(epochKey(epoch, "lost." + std::to_string(rank)),
                   std::to_string(stepsDone) + " " + error))
    throw Error("cannot write the in-job recovery report of rank " +
                std::to_string(rank) + " into the store " + store_);
}

std::optional<LostReport> RecoveryBoard::lost(int64_t epoch, int64_t rank) {
  std::optional<std::string> text =
      board_->get(epochKey(epoch, "lost." + std::to_string(rank)));
  if (!text)
    return std::nullopt;
  LostReport report;
  size_t space = text->find(' ');
  try {
    report.stepsDone = std::stoll(text->substr(0, space));
  } catch (const std::exception &) {
    return std::nullopt; // not a report
  }
  if (space != std::string::npos)
    report.error = text->substr(space + 1);
  return report;
}

void RecoveryBoard::open(int64_t epoch, int64_t world) {
  if (!board_->put(epochKey(epoch, "open"), std::to_string(world)))
    throw Error("cannot open epoch " + std::to_string(epoch) +
                " of the in-job recovery in the store " + store_);
}

bool RecoveryBoard::isOpen(int64_t epoch) {
  return board_->get(epochKey(epoch, "open")).has_value();
}

RecoveryBoard::Decision
RecoveryBoard::waitDecision(int64_t epoch, double seconds,
                            const std::function<bool()> &cancelled) {
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (true) {
    if (isOpen(epoch + 1))
      return Decision::Replace;
    if (shrinking(epoch))
      return Decision::Shrink;
    if (std::chrono::steady_clock::now() > deadline ||
        (cancelled && cancelled()))
      return Decision::None;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// "1,2,5" as numbers; nothing when it is no such list.
static std::optional<std::vector<int64_t>> parseList(const std::string &text) {
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

std::optional<std::vector<int64_t>>
RecoveryBoard::readList(const std::string &key, const std::string &what) {
  std::optional<std::string> text = board_->get(key);
  if (!text)
    return std::nullopt;
  std::optional<std::vector<int64_t>> numbers = parseList(*text);
  if (!numbers)
    throw Error("the store " + store_ + " holds " + what + ": '" + *text + "'");
  return numbers;
}

static std::string listText(const std::vector<int64_t> &numbers) {
  std::string list;
  for (int64_t n : numbers)
    list += (list.empty() ? "" : ",") + std::to_string(n);
  return list;
}

void RecoveryBoard::shrink(int64_t epoch,
                           const std::vector<int64_t> &survivors) {
  if (!board_->put(epochKey(epoch, "shrink"), listText(survivors)))
    throw Error("cannot write the shrink after epoch " + std::to_string(epoch) +
                " into the store " + store_);
}

std::optional<std::vector<int64_t>> RecoveryBoard::shrinking(int64_t epoch) {
  return readList(epochKey(epoch, "shrink"), "a shrink after epoch " +
                                                 std::to_string(epoch) +
                                                 " that is no list of ranks");
}

void RecoveryBoard::saved(int64_t epoch, int64_t rank,
                          const std::string &error) {
  if (!board_->put(epochKey(epoch, "saved." + std::to_string(rank)),
                   error.empty() ? "ok" : "error: " + error))
    throw Error("cannot write into the store " + store_ + " that rank " +
                std::to_string(rank) + " saved its state after epoch " +
                std::to_string(epoch));
}

std::optional<std::string> RecoveryBoard::savedBy(int64_t epoch, int64_t rank) {
  std::optional<std::string> text =
      board_->get(epochKey(epoch, "saved." + std::to_string(rank)));
  if (!text || *text == "ok")
    return text ? std::optional<std::string>("") : std::nullopt;
  return text->rfind("error: ", 0) == 0 ? text->substr(7) : *text;
}

int64_t RecoveryBoard::claimNumber(const std::string &prefix,
                                   const std::string &value) {
  // The first number no writer has taken; two writers at once take two
  // (putIfAbsent is atomic in the store).
  for (int64_t n = 0;; ++n) {
    std::string key = prefix + std::to_string(n);
    if (board_->get(key))
      continue;
    if (board_->putIfAbsent(key, value))
      return n;
  }
}

int64_t RecoveryBoard::offerRanks(int64_t ranks, const std::string &from) {
  return claimNumber("join.", std::to_string(ranks) + " " + from);
}

int64_t RecoveryBoard::claimLaunch(const std::string &by) {
  return claimNumber("launch.", by);
}

std::optional<int64_t> RecoveryBoard::offer(int64_t n) {
  std::optional<std::string> text = board_->get("join." + std::to_string(n));
  if (!text)
    return std::nullopt;
  try {
    int64_t ranks = std::stoll(text->substr(0, text->find(' ')));
    if (ranks > 0)
      return ranks;
  } catch (const std::exception &) {
  }
  throw Error("the store " + store_ + " holds an offer join." +
              std::to_string(n) + " that names no number of ranks: '" + *text +
              "'");
}

bool RecoveryBoard::takeOffer(int64_t n, const std::string &by) {
  return board_->putIfAbsent("join." + std::to_string(n) + ".taken", by);
}

bool RecoveryBoard::offerTaken(int64_t n) {
  return board_->get("join." + std::to_string(n) + ".taken").has_value();
}

static std::string roundKey(int64_t round, const std::string &rest) {
  return "round-" + std::to_string(round) + "." + rest;
}

void RecoveryBoard::startRound(int64_t round, int64_t node,
                               const std::string &by) {
  if (!board_->put(roundKey(round, "node-" + std::to_string(node)), by))
    throw Error("cannot write into the store " + store_ + " that node " +
                std::to_string(node) + " started restart round " +
                std::to_string(round));
}

void RecoveryBoard::failRound(int64_t round, const std::string &why) {
  // The first reason written stays.
  board_->putIfAbsent(roundKey(round, "failed"), why);
}

std::optional<std::string> RecoveryBoard::roundFailure(int64_t round) {
  return board_->get(roundKey(round, "failed"));
}

bool RecoveryBoard::roundStarted(int64_t round, int64_t nodes) {
  for (int64_t i = 0; i < nodes; ++i)
    if (board_->get(roundKey(round, "node-" + std::to_string(i))))
      return true;
  return false;
}

int64_t RecoveryBoard::enterRound(int64_t node, int64_t nodes,
                                  const std::string &by) {
  int64_t newest = -1;
  while (roundStarted(newest + 1, nodes))
    ++newest;
  int64_t round = 0;
  if (newest >= 0) {
    // It ran in that round: it started it and was one of its members (an
    // agent that only waited outside a shrunk round left nothing behind).
    std::optional<std::vector<int64_t>> members = roundMembers(newest);
    bool mine = board_->get(roundKey(newest, "node-" + std::to_string(node)))
                    .has_value() &&
                (!members || std::find(members->begin(), members->end(),
                                       node) != members->end());
    if (mine || roundFailure(newest)) {
      // This node ran in that round already (it was lost and came back):
      // the others hold state of a round it left; all start the next.
      failRound(newest,
                "node " + std::to_string(node) + " (" + by + ") came back");
      round = newest + 1;
    } else {
      round = newest; // the others wait for this node in its rendezvous
    }
  }
  startRound(round, node, by);
  return round;
}

std::vector<int64_t>
RecoveryBoard::meetNodes(int64_t round, int64_t nodes, double waitSeconds,
                         const std::function<bool()> &cancelled) {
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(waitSeconds * 1000));
  while (!roundMembers(round)) {
    std::vector<int64_t> started;
    for (int64_t i = 0; i < nodes; ++i)
      if (board_->get(roundKey(round, "node-" + std::to_string(i))))
        started.push_back(i);
    if (static_cast<int64_t>(started.size()) == nodes ||
        std::chrono::steady_clock::now() > deadline) {
      board_->putIfAbsent(roundKey(round, "members"), listText(started));
      break;
    }
    if (cancelled && cancelled())
      return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::optional<std::vector<int64_t>> members = roundMembers(round);
  if (!members)
    throw Error("cannot write the nodes of restart round " +
                std::to_string(round) + " into the store " + store_);
  return *members;
}

std::optional<std::vector<int64_t>> RecoveryBoard::roundMembers(int64_t round) {
  return readList(roundKey(round, "members"), "members of restart round " +
                                                  std::to_string(round) +
                                                  " that are no list of nodes");
}

void RecoveryBoard::askToJoin(int64_t round, int64_t node,
                              const std::string &by) {
  board_->putIfAbsent(roundKey(round, "join"), std::to_string(node) + " " + by);
  if (!joinRequest(round))
    throw Error("cannot write into the store " + store_ + " that node " +
                std::to_string(node) + " asks to join restart round " +
                std::to_string(round));
}

std::optional<std::string> RecoveryBoard::joinRequest(int64_t round) {
  return board_->get(roundKey(round, "join"));
}

void RecoveryBoard::endJob(int64_t round, int code) {
  board_->putIfAbsent(roundKey(round, "ended"), std::to_string(code));
}

std::optional<int> RecoveryBoard::jobEnded(int64_t round) {
  std::optional<std::string> text = board_->get(roundKey(round, "ended"));
  if (!text)
    return std::nullopt;
  try {
    return std::stoi(*text);
  } catch (const std::exception &) {
    return 1;
  }
}

void RecoveryBoard::beginLoss(int64_t epoch) {
  if (!board_->put(epochKey(epoch, "loss"), "1"))
    throw Error("cannot write into the store " + store_ +
                " that a loss began in epoch " + std::to_string(epoch));
}

bool RecoveryBoard::lossBegun(int64_t epoch) {
  return board_->get(epochKey(epoch, "loss")).has_value();
}

void RecoveryBoard::settleLoss(int64_t epoch, int64_t node,
                               const NodeLoss &loss) {
  std::string text = std::to_string(loss.survivors) + " ";
  for (size_t i = 0; i < loss.lost.size(); ++i)
    text += (i ? "," : "") + std::to_string(loss.lost[i]);
  if (!board_->put(epochKey(epoch, "node-" + std::to_string(node)), text))
    throw Error("cannot write into the store " + store_ + " what node " +
                std::to_string(node) + " found of the loss in epoch " +
                std::to_string(epoch));
}

std::optional<RecoveryBoard::NodeLoss>
RecoveryBoard::settledLoss(int64_t epoch, int64_t node) {
  std::optional<std::string> text =
      board_->get(epochKey(epoch, "node-" + std::to_string(node)));
  if (!text)
    return std::nullopt;
  NodeLoss loss;
  try {
    size_t space = text->find(' ');
    loss.survivors = std::stoll(text->substr(0, space));
    std::string list =
        space == std::string::npos ? "" : text->substr(space + 1);
    for (size_t at = 0; at < list.size();) {
      size_t comma = list.find(',', at);
      loss.lost.push_back(std::stoll(list.substr(at, comma - at)));
      at = comma == std::string::npos ? list.size() : comma + 1;
    }
  } catch (const std::exception &) {
    throw Error("the store " + store_ + " holds a malformed settlement of " +
                "node " + std::to_string(node) + " in epoch " +
                std::to_string(epoch) + ": '" + *text + "'");
  }
  return loss;
}

void RecoveryBoard::joined(int64_t epoch, int64_t rank) {
  if (!board_->put(epochKey(epoch, "joined." + std::to_string(rank)), "1"))
    throw Error("cannot write into the store " + store_ + " that rank " +
                std::to_string(rank) + " joined epoch " +
                std::to_string(epoch));
}

bool RecoveryBoard::hasJoined(int64_t epoch, int64_t rank) {
  return board_->get(epochKey(epoch, "joined." + std::to_string(rank)))
      .has_value();
}

std::string RecoveryBoard::epochRun(const std::string &run, int64_t epoch) {
  return epoch == 0 ? run : run + "-epoch" + std::to_string(epoch);
}
