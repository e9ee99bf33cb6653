//===- GrowthBoard.cpp - offers of ranks to a running job -----------------===//

#include "rtxrt/elastic/GrowthBoard.h"

#include "Board.h"

#include "rtxrt/core/Tensor.h"

using namespace rtxrt;

std::string growth_keys::offer(int64_t n) {
  return "join." + std::to_string(n);
}
std::string growth_keys::taken(int64_t n) { return offer(n) + ".taken"; }
std::string growth_keys::launch(int64_t g) {
  return "launch." + std::to_string(g);
}

GrowthBoard::GrowthBoard(const std::string &store, const std::string &run,
                         double timeoutSeconds)
    : board_(std::make_unique<detail::Board>("growth by offered ranks", store,
                                             run, timeoutSeconds)) {}

GrowthBoard::~GrowthBoard() = default;

int64_t GrowthBoard::claimLaunch(const std::string &by) {
  return board_->claimNumber(growth_keys::launch, by);
}

int64_t GrowthBoard::offerRanks(int64_t ranks, const std::string &from) {
  return board_->claimNumber(growth_keys::offer,
                             std::to_string(ranks) + " " + from);
}

std::optional<int64_t> GrowthBoard::offer(int64_t n) {
  std::optional<std::string> text = board_->get(growth_keys::offer(n));
  if (!text)
    return std::nullopt;
  try {
    int64_t ranks = std::stoll(text->substr(0, text->find(' ')));
    if (ranks > 0)
      return ranks;
  } catch (const std::exception &) {
  }
  throw Error("the store " + board_->store() + " holds an offer " +
              growth_keys::offer(n) + " that names no number of ranks: '" +
              *text + "'");
}

bool GrowthBoard::takeOffer(int64_t n, const std::string &by) {
  return board_->putIfAbsent(growth_keys::taken(n), by);
}

bool GrowthBoard::offerTaken(int64_t n) {
  return board_->has(growth_keys::taken(n));
}
