//===- RoundBoard.cpp - restart rounds of a job of several nodes ----------===//

#include "rtxrt/elastic/RoundBoard.h"

#include "Board.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <chrono>
#include <thread>

using namespace rtxrt;

static std::string roundKey(int64_t round, const std::string &rest) {
  return "round-" + std::to_string(round) + "." + rest;
}

std::string round_keys::node(int64_t round, int64_t node) {
  return roundKey(round, "node-" + std::to_string(node));
}
std::string round_keys::failed(int64_t round) {
  return roundKey(round, "failed");
}
std::string round_keys::members(int64_t round) {
  return roundKey(round, "members");
}
std::string round_keys::join(int64_t round) { return roundKey(round, "join"); }
std::string round_keys::ended(int64_t round) {
  return roundKey(round, "ended");
}

RoundBoard::RoundBoard(const std::string &store, const std::string &run,
                       double timeoutSeconds)
    : board_(std::make_unique<detail::Board>("a restart of several nodes",
                                             store, run, timeoutSeconds)) {}

RoundBoard::~RoundBoard() = default;

void RoundBoard::startRound(int64_t round, int64_t node,
                            const std::string &by) {
  board_->put(round_keys::node(round, node), by,
              "that node " + std::to_string(node) + " started restart round " +
                  std::to_string(round));
}

void RoundBoard::failRound(int64_t round, const std::string &why) {
  board_->putIfAbsent(round_keys::failed(round), why);
}

std::optional<std::string> RoundBoard::roundFailure(int64_t round) {
  return board_->get(round_keys::failed(round));
}

std::vector<int64_t> RoundBoard::startedNodes(int64_t round, int64_t nodes) {
  std::vector<int64_t> started;
  for (int64_t i = 0; i < nodes; ++i)
    if (board_->has(round_keys::node(round, i)))
      started.push_back(i);
  return started;
}

bool RoundBoard::roundStarted(int64_t round, int64_t nodes) {
  for (int64_t i = 0; i < nodes; ++i)
    if (board_->has(round_keys::node(round, i)))
      return true;
  return false;
}

int64_t RoundBoard::enterRound(int64_t node, int64_t nodes,
                               const std::string &by) {
  int64_t newest = -1;
  while (roundStarted(newest + 1, nodes))
    ++newest;
  int64_t round = 0;
  if (newest >= 0) {
    // It ran in that round: it started it and was one of its members (an
    // agent that only waited outside a shrunk round left nothing behind).
    std::optional<std::vector<int64_t>> members = roundMembers(newest);
    bool mine = board_->has(round_keys::node(newest, node)) &&
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
RoundBoard::meetNodes(int64_t round, int64_t nodes, double waitSeconds,
                      const std::function<bool()> &cancelled) {
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(waitSeconds * 1000));
  while (!roundMembers(round)) {
    std::vector<int64_t> started = startedNodes(round, nodes);
    if (static_cast<int64_t>(started.size()) == nodes ||
        std::chrono::steady_clock::now() > deadline) {
      board_->putIfAbsent(round_keys::members(round),
                          detail::listText(started));
      break;
    }
    if (cancelled && cancelled())
      return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::optional<std::vector<int64_t>> members = roundMembers(round);
  if (!members)
    throw Error("cannot write the nodes of restart round " +
                std::to_string(round) + " into the store " + board_->store());
  return *members;
}

std::optional<std::vector<int64_t>> RoundBoard::roundMembers(int64_t round) {
  return board_->readList(round_keys::members(round),
                          "members of restart round " + std::to_string(round) +
                              " that are no list of nodes");
}

void RoundBoard::askToJoin(int64_t round, int64_t node, const std::string &by) {
  board_->putIfAbsent(round_keys::join(round), std::to_string(node) + " " + by);
  if (!joinRequest(round))
    throw Error("cannot write into the store " + board_->store() +
                " that node " + std::to_string(node) +
                " asks to join restart round " + std::to_string(round));
}

std::optional<std::string> RoundBoard::joinRequest(int64_t round) {
  return board_->get(round_keys::join(round));
}

void RoundBoard::endJob(int64_t round, int code) {
  board_->putIfAbsent(round_keys::ended(round), std::to_string(code));
}

std::optional<int> RoundBoard::jobEnded(int64_t round) {
  std::optional<std::string> text = board_->get(round_keys::ended(round));
  if (!text)
    return std::nullopt;
  try {
    return std::stoi(*text);
  } catch (const std::exception &) {
    return 1;
  }
}
