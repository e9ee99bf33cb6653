//===- EpochBoard.cpp - in-job recovery's epochs over the store -----------===//

#include "rtxrt/elastic/EpochBoard.h"

#include "Board.h"

#include "rtxrt/core/Tensor.h"

#include <chrono>
#include <thread>

using namespace rtxrt;

static std::string epochKey(int64_t epoch, const std::string &rest) {
  return "epoch-" + std::to_string(epoch) + "." + rest;
}

std::string epoch_keys::lost(int64_t epoch, int64_t rank) {
  return epochKey(epoch, "lost." + std::to_string(rank));
}
std::string epoch_keys::open(int64_t epoch) { return epochKey(epoch, "open"); }
std::string epoch_keys::joined(int64_t epoch, int64_t rank) {
  return epochKey(epoch, "joined." + std::to_string(rank));
}
std::string epoch_keys::shrink(int64_t epoch) {
  return epochKey(epoch, "shrink");
}
std::string epoch_keys::saved(int64_t epoch, int64_t rank) {
  return epochKey(epoch, "saved." + std::to_string(rank));
}
std::string epoch_keys::loss(int64_t epoch) { return epochKey(epoch, "loss"); }
std::string epoch_keys::node(int64_t epoch, int64_t node) {
  return epochKey(epoch, "node-" + std::to_string(node));
}

EpochBoard::EpochBoard(const std::string &store, const std::string &run,
                       double timeoutSeconds)
    : board_(std::make_unique<detail::Board>("in-job recovery", store, run,
                                             timeoutSeconds)) {}

EpochBoard::~EpochBoard() = default;

void EpochBoard::reportLost(int64_t epoch, int64_t rank, int64_t stepsDone,
                            const std::string &error) {
  board_->put(epoch_keys::lost(epoch, rank),
              std::to_string(stepsDone) + " " + error,
              "the in-job recovery report of rank " + std::to_string(rank));
}

std::optional<LostReport> EpochBoard::lost(int64_t epoch, int64_t rank) {
  std::optional<std::string> text = board_->get(epoch_keys::lost(epoch, rank));
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

void EpochBoard::open(int64_t epoch, int64_t world) {
  board_->put(epoch_keys::open(epoch), std::to_string(world),
              "that epoch " + std::to_string(epoch) +
                  " of the in-job recovery is open");
}

bool EpochBoard::isOpen(int64_t epoch) {
  return board_->has(epoch_keys::open(epoch));
}

EpochBoard::Decision
EpochBoard::waitDecision(int64_t epoch, double seconds,
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

void EpochBoard::shrink(int64_t epoch, const std::vector<int64_t> &survivors) {
  board_->put(epoch_keys::shrink(epoch), detail::listText(survivors),
              "the shrink after epoch " + std::to_string(epoch));
}

std::optional<std::vector<int64_t>> EpochBoard::shrinking(int64_t epoch) {
  return board_->readList(epoch_keys::shrink(epoch),
                          "a shrink after epoch " + std::to_string(epoch) +
                              " that is no list of ranks");
}

void EpochBoard::saved(int64_t epoch, int64_t rank, const std::string &error) {
  board_->put(epoch_keys::saved(epoch, rank),
              error.empty() ? "ok" : "error: " + error,
              "that rank " + std::to_string(rank) +
                  " saved its state after epoch " + std::to_string(epoch));
}

std::optional<std::string> EpochBoard::savedBy(int64_t epoch, int64_t rank) {
  std::optional<std::string> text = board_->get(epoch_keys::saved(epoch, rank));
  if (!text || *text == "ok")
    return text ? std::optional<std::string>("") : std::nullopt;
  return text->rfind("error: ", 0) == 0 ? text->substr(7) : *text;
}

void EpochBoard::joined(int64_t epoch, int64_t rank) {
  board_->put(epoch_keys::joined(epoch, rank), "1",
              "that rank " + std::to_string(rank) + " joined epoch " +
                  std::to_string(epoch));
}

bool EpochBoard::hasJoined(int64_t epoch, int64_t rank) {
  return board_->has(epoch_keys::joined(epoch, rank));
}

void EpochBoard::beginLoss(int64_t epoch) {
  board_->put(epoch_keys::loss(epoch), "1",
              "that a loss began in epoch " + std::to_string(epoch));
}

bool EpochBoard::lossBegun(int64_t epoch) {
  return board_->has(epoch_keys::loss(epoch));
}

void EpochBoard::settleLoss(int64_t epoch, int64_t node, const NodeLoss &loss) {
  board_->put(epoch_keys::node(epoch, node),
              std::to_string(loss.survivors) + " " +
                  detail::listText(loss.lost),
              "what node " + std::to_string(node) +
                  " found of the loss in epoch " + std::to_string(epoch));
}

std::optional<EpochBoard::NodeLoss> EpochBoard::settledLoss(int64_t epoch,
                                                            int64_t node) {
  std::optional<std::string> text = board_->get(epoch_keys::node(epoch, node));
  if (!text)
    return std::nullopt;
  NodeLoss loss;
  size_t space = text->find(' ');
  std::optional<std::vector<int64_t>> lost = detail::parseList(
      space == std::string::npos ? "" : text->substr(space + 1));
  try {
    loss.survivors = std::stoll(text->substr(0, space));
  } catch (const std::exception &) {
    lost.reset();
  }
  if (!lost)
    throw Error("the store " + board_->store() +
                " holds a malformed settlement of node " +
                std::to_string(node) + " in epoch " + std::to_string(epoch) +
                ": '" + *text + "'");
  loss.lost = std::move(*lost);
  return loss;
}

std::string EpochBoard::epochRun(const std::string &run, int64_t epoch) {
  return epoch == 0 ? run : run + "-epoch" + std::to_string(epoch);
}
