//===- PipelineSchedule.cpp - pipeline schedules as data ------------------===//
//
// The text form, the generators, and the simulator that proves a schedule
// sound (rtx/Analysis/PipelineSchedule.h). Plain C++: the runtime can run
// the same schedules.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/PipelineSchedule.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

using namespace mlir::rtx::pipeline;

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

namespace {
struct KindName {
  ActionKind kind;
  const char *name;
};
// Longest first: "SEND_F" must not parse as "S".
const KindName kKindNames[] = {{ActionKind::SendForward, "SEND_F"},
                               {ActionKind::RecvForward, "RECV_F"},
                               {ActionKind::SendBackward, "SEND_B"},
                               {ActionKind::RecvBackward, "RECV_B"},
                               {ActionKind::Forward, "F"},
                               {ActionKind::Backward, "B"},
                               {ActionKind::Weight, "W"}};

bool isCompute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward ||
         k == ActionKind::Weight;
}
} // namespace

std::string Action::str() const {
  if (kind == ActionKind::Optimizer)
    return "OPTIMIZER";
  if (kind == ActionKind::ReduceGrad)
    return std::to_string(stage) + "REDUCE_GRAD";
  for (const KindName &k : kKindNames)
    if (k.kind == kind)
      return std::to_string(stage) + k.name + std::to_string(microBatch);
  return "?";
}

std::string Schedule::str() const {
  std::string out;
  for (int64_t r = 0; r < ranks; ++r) {
    out += "rank " + std::to_string(r) + ":";
    for (const Action &a : actions[r])
      out += " " + a.str();
    out += "\n";
  }
  return out;
}

std::string Diagnostic::str() const {
  if (rank < 0)
    return message;
  return "rank " + std::to_string(rank) +
         (index >= 0 ? ", action " + std::to_string(index) : std::string()) +
         ": " + message;
}

std::optional<ScheduleKind>
mlir::rtx::pipeline::parseScheduleKind(const std::string &name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneFOneB;
  if (name == "interleaved")
    return ScheduleKind::Interleaved;
  if (name == "zb-h1")
    return ScheduleKind::ZeroBubbleH1;
  return std::nullopt;
}

const char *mlir::rtx::pipeline::scheduleKindName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  return "?";
}

/// One token: "2F0", "1SEND_B3", "0REDUCE_GRAD", "OPTIMIZER".
static std::optional<Action> parseAction(const std::string &token) {
  if (token == "OPTIMIZER")
    return Action{ActionKind::Optimizer, -1, -1};
  size_t i = 0;
  while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i])))
    ++i;
  if (i == 0 || i > 9)
    return std::nullopt;
  int64_t stage = std::stoll(token.substr(0, i));
  std::string rest = token.substr(i);
  if (rest == "REDUCE_GRAD")
    return Action{ActionKind::ReduceGrad, stage, -1};
  for (const KindName &k : kKindNames) {
    std::string name = k.name;
    if (rest.compare(0, name.size(), name) != 0)
      continue;
    std::string digits = rest.substr(name.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return Action{k.kind, stage, std::stoll(digits)};
  }
  return std::nullopt;
}

ParseResult mlir::rtx::pipeline::parseSchedule(const std::string &text,
                                               int64_t stagesPerRank) {
  ParseResult result;
  Schedule schedule;
  schedule.stagesPerRank = stagesPerRank;
  std::istringstream lines(text);
  std::string line;
  int64_t lineNumber = 0, maxMicroBatch = -1;
  std::map<int64_t, std::vector<Action>> byRank;
  while (std::getline(lines, line)) {
    ++lineNumber;
    if (auto hash = line.find('#'); hash != std::string::npos)
      line = line.substr(0, hash); // comments
    std::istringstream words(line);
    std::string word;
    if (!(words >> word))
      continue;
    auto bad = [&](const std::string &why) {
      result.errors.push_back(
          {-1, -1, "line " + std::to_string(lineNumber) + ": " + why});
    };
    std::string rankText;
    if (word != "rank" || !(words >> rankText) || rankText.empty() ||
        rankText.back() != ':' ||
        rankText.find_first_not_of("0123456789") != rankText.size() - 1 ||
        rankText.size() < 2 || rankText.size() > 8) {
      bad("expected 'rank R: ACTIONS', got '" + line + "'");
      continue;
    }
    int64_t rank = std::stoll(rankText.substr(0, rankText.size() - 1));
    if (byRank.count(rank)) {
      bad("rank " + std::to_string(rank) + " is listed twice");
      continue;
    }
    std::vector<Action> &actions = byRank[rank];
    while (words >> word) {
      std::optional<Action> action = parseAction(word);
      if (!action) {
        bad("'" + word +
            "' is not an action (STAGE then F, B, W, SEND_F, RECV_F, "
            "SEND_B, RECV_B and a micro-batch, STAGE REDUCE_GRAD, or "
            "OPTIMIZER)");
        continue;
      }
      maxMicroBatch = std::max(maxMicroBatch, action->microBatch);
      actions.push_back(*action);
    }
  }
  if (byRank.empty())
    result.errors.push_back({-1, -1, "the schedule lists no rank"});
  int64_t expected = 0;
  for (auto &[rank, actions] : byRank) {
    if (rank != expected++) {
      result.errors.push_back(
          {-1, -1,
           "the ranks must be 0, 1, ... without gaps: rank " +
               std::to_string(expected - 1) + " is missing"});
      break;
    }
    schedule.actions.push_back(std::move(actions));
  }
  if (!result.errors.empty())
    return result;
  schedule.ranks = static_cast<int64_t>(schedule.actions.size());
  schedule.microBatches = maxMicroBatch + 1;
  result.schedule = std::move(schedule);
  return result;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

/// Adds the sends and receives between ranks around the compute actions,
/// REDUCE_GRAD after each stage's last gradient action, and OPTIMIZER.
static void lowerCommunication(Schedule &s) {
  int64_t stages = s.stages();
  for (int64_t r = 0; r < s.ranks; ++r) {
    std::vector<Action> out;
    // The last gradient action (B, or W where the stage has W) of each
    // stage on this rank: its REDUCE_GRAD follows it.
    std::map<int64_t, size_t> lastGradient;
    for (size_t i = 0; i < s.actions[r].size(); ++i) {
      const Action &a = s.actions[r][i];
      if (a.kind == ActionKind::Backward || a.kind == ActionKind::Weight)
        lastGradient[a.stage] = i;
    }
    for (size_t i = 0; i < s.actions[r].size(); ++i) {
      const Action &a = s.actions[r][i];
      bool fromOther = a.stage > 0 && s.rankOf(a.stage - 1) != r;
      bool toNext = a.stage + 1 < stages && s.rankOf(a.stage + 1) != r;
      if (a.kind == ActionKind::Forward && fromOther)
        out.push_back({ActionKind::RecvForward, a.stage, a.microBatch});
      if (a.kind == ActionKind::Backward && toNext)
        out.push_back({ActionKind::RecvBackward, a.stage, a.microBatch});
      out.push_back(a);
      if (a.kind == ActionKind::Forward && toNext)
        out.push_back({ActionKind::SendForward, a.stage, a.microBatch});
      if (a.kind == ActionKind::Backward && fromOther)
        out.push_back({ActionKind::SendBackward, a.stage, a.microBatch});
      if (auto it = lastGradient.find(a.stage);
          it != lastGradient.end() && it->second == i)
        out.push_back({ActionKind::ReduceGrad, a.stage, -1});
    }
    out.push_back({ActionKind::Optimizer, -1, -1});
    s.actions[r] = std::move(out);
  }
}

/// 1F1B's order on one rank of stages `stageOf(k)` / micro-batches: `warmup`
/// forwards, then a forward and a backward in turn, then the remaining
/// backwards. `forward(k)` and `backward(k)` give the k-th of each.
template <typename F, typename B>
static std::vector<Action> oneFOneB(int64_t count, int64_t warmup, F forward,
                                    B backward) {
  std::vector<Action> order;
  warmup = std::min(warmup, count);
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f)
    order.push_back(forward(f));
  while (f < count) {
    order.push_back(forward(f++));
    order.push_back(backward(b++));
  }
  while (b < count)
    order.push_back(backward(b++));
  return order;
}

/// ZB-H1 by list scheduling under unit costs (F = B = W = 1; Qi et al.,
/// "Zero Bubble Pipeline Parallelism", schedule H1). Whenever a rank is
/// free it runs a ready backward (input gradient) first, then a forward,
/// then a weight gradient, within these limits:
/// - rank r holds at most 1F1B's p - r micro-batches between forward and
///   backward, so the activations a backward frees stay at 1F1B's bound;
/// - it keeps r weight gradients pending while forwards can still come, so
///   that backwards flow back without waiting behind one, and the weight
///   gradients fill the cool-down instead;
/// - at most 2p - r micro-batches between forward and weight gradient (the
///   inputs a weight gradient keeps).
/// Under uniform costs the step takes 3m + p - 1 units: a bubble of
/// (p - 1)(F + B - W) against 1F1B's (p - 1)(F + B + W)
/// (PipelineScheduleTest checks both).
static std::vector<std::vector<Action>> zeroBubbleH1(int64_t p, int64_t m) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<Action>> order(p);
  std::vector<double> clock(p, 0);
  // When stage s's input (forward) / output gradient (backward) of micro-
  // batch i is there.
  std::vector<std::vector<double>> inputAt(p, std::vector<double>(m, inf)),
      gradAt(p, std::vector<double>(m, inf));
  for (int64_t i = 0; i < m; ++i)
    inputAt[0][i] = 0;
  std::vector<int64_t> nextF(p, 0), nextB(p, 0), doneW(p, 0);
  std::vector<std::deque<int64_t>> pendingW(p);
  int64_t remaining = p * m * 3;
  while (remaining > 0) {
    // The rank that can start something soonest, and what.
    int64_t bestRank = -1;
    double bestStart = inf;
    Action best;
    for (int64_t r = 0; r < p; ++r) {
      std::vector<std::pair<double, Action>> candidates;
      if (nextB[r] < nextF[r])
        candidates.push_back({std::max(clock[r], gradAt[r][nextB[r]]),
                              {ActionKind::Backward, r, nextB[r]}});
      bool forwardFits = nextF[r] < m && nextF[r] - doneW[r] < 2 * p - r;
      if (forwardFits && nextF[r] - nextB[r] < p - r)
        candidates.push_back({std::max(clock[r], inputAt[r][nextF[r]]),
                              {ActionKind::Forward, r, nextF[r]}});
      // Rank r keeps r weight gradients in reserve until its last
      // backward, so that a backward never waits behind one.
      // Rank r keeps r weight gradients pending (so that a backward never
      // waits behind one) unless no forward can come first, or none is
      // left.
      if (!pendingW[r].empty() &&
          (int64_t(pendingW[r].size()) > r || nextB[r] == m || !forwardFits))
        candidates.push_back(
            {clock[r], {ActionKind::Weight, r, pendingW[r].front()}});
      // Candidates are in priority order; take the first that can start
      // at the earliest of their times.
      double earliest = inf;
      for (auto &c : candidates)
        earliest = std::min(earliest, c.first);
      for (auto &c : candidates)
        if (c.first == earliest) {
          if (earliest < bestStart) {
            bestStart = earliest;
            bestRank = r;
            best = c.second;
          }
          break;
        }
    }
    if (bestRank < 0)
      break; // nothing can run: the simulator reports what is missing
    int64_t r = bestRank, i = best.microBatch;
    double end = bestStart + 1;
    clock[r] = end;
    order[r].push_back(best);
    --remaining;
    if (best.kind == ActionKind::Forward) {
      ++nextF[r];
      if (r + 1 < p)
        inputAt[r + 1][i] = end;
      else
        gradAt[r][i] = end; // the loss: its gradient starts here
    } else if (best.kind == ActionKind::Backward) {
      ++nextB[r];
      pendingW[r].push_back(i);
      if (r > 0)
        gradAt[r - 1][i] = end;
    } else {
      pendingW[r].pop_front();
      ++doneW[r];
    }
  }
  return order;
}

GenerateResult mlir::rtx::pipeline::generateSchedule(ScheduleKind kind,
                                                     int64_t p, int64_t m,
                                                     int64_t v) {
  GenerateResult result;
  std::string name = scheduleKindName(kind);
  if (p < 1 || m < 1 || v < 1) {
    result.error = name +
                   " needs at least one rank, micro-batch and "
                   "virtual stage, got " +
                   std::to_string(p) + ", " + std::to_string(m) + " and " +
                   std::to_string(v);
    return result;
  }
  if (v != 1 && kind != ScheduleKind::Interleaved) {
    result.error = name + " has one stage per rank: virtual stages (" +
                   std::to_string(v) + ") need the interleaved schedule";
    return result;
  }
  if ((kind == ScheduleKind::OneFOneB || kind == ScheduleKind::ZeroBubbleH1 ||
       kind == ScheduleKind::Interleaved) &&
      m < p) {
    result.error = name +
                   " needs at least as many micro-batches as pipeline "
                   "ranks (its warm-up fills every stage), got " +
                   std::to_string(m) + " micro-batches for " +
                   std::to_string(p) +
                   " ranks; use more micro-batches or "
                   "gpipe";
    return result;
  }
  if (kind == ScheduleKind::Interleaved && m % p != 0) {
    result.error = "interleaved needs a micro-batch count that the " +
                   std::to_string(p) +
                   " pipeline ranks divide (it runs "
                   "micro-batches in groups of one per rank), got " +
                   std::to_string(m);
    return result;
  }
  Schedule s;
  s.ranks = p;
  s.microBatches = m;
  s.stagesPerRank = v;
  s.actions.resize(p);
  for (int64_t r = 0; r < p; ++r) {
    auto forward = [&](int64_t i) { return Action{ActionKind::Forward, r, i}; };
    auto backward = [&](int64_t i) {
      return Action{ActionKind::Backward, r, i};
    };
    switch (kind) {
    case ScheduleKind::GPipe:
      for (int64_t i = 0; i < m; ++i)
        s.actions[r].push_back(forward(i));
      for (int64_t i = 0; i < m; ++i)
        s.actions[r].push_back(backward(i));
      break;
    case ScheduleKind::OneFOneB:
      s.actions[r] = oneFOneB(m, p - r - 1, forward, backward);
      break;
    case ScheduleKind::Interleaved: {
      // Megatron's order: the k-th forward of a rank is micro-batch
      // (k / (p v)) p + k % p of its chunk (k / p) % v; backwards run the
      // chunks in reverse.
      auto microBatch = [&](int64_t k) { return (k / (p * v)) * p + k % p; };
      auto chunkStage = [&](int64_t chunk) { return chunk * p + r; };
      s.actions[r] = oneFOneB(
          m * v, (p - r - 1) * 2 + (v - 1) * p,
          [&](int64_t k) {
            return Action{ActionKind::Forward, chunkStage((k / p) % v),
                          microBatch(k)};
          },
          [&](int64_t k) {
            return Action{ActionKind::Backward, chunkStage(v - 1 - (k / p) % v),
                          microBatch(k)};
          });
      break;
    }
    case ScheduleKind::ZeroBubbleH1:
      break; // below, all ranks at once
    }
  }
  if (kind == ScheduleKind::ZeroBubbleH1)
    s.actions = zeroBubbleH1(p, m);
  lowerCommunication(s);
  result.schedule = std::move(s);
  return result;
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

double SimulationResult::bubbleFraction() const {
  if (makespan <= 0 || busy.empty())
    return 0;
  double total = 0;
  for (double b : busy)
    total += b;
  return 1.0 - total / (double(busy.size()) * makespan);
}

double mlir::rtx::pipeline::formulaBubbleFraction(int64_t p, int64_t m,
                                                  int64_t v) {
  return double(p - 1) / double(v * m + p - 1);
}

namespace {
/// Where each action of a schedule is: (rank, index), by action.
using Position = std::pair<int64_t, int64_t>;

/// The send a receive waits for, and the receive a send feeds.
Action matchingSend(const Action &recv) {
  if (recv.kind == ActionKind::RecvForward)
    return {ActionKind::SendForward, recv.stage - 1, recv.microBatch};
  return {ActionKind::SendBackward, recv.stage + 1, recv.microBatch};
}
Action matchingRecv(const Action &send) {
  if (send.kind == ActionKind::SendForward)
    return {ActionKind::RecvForward, send.stage + 1, send.microBatch};
  return {ActionKind::RecvBackward, send.stage - 1, send.microBatch};
}
} // namespace

/// The static rules: each action where it belongs, once, after what it
/// needs on its own rank; every send with its receive.
static std::vector<Diagnostic> checkStatically(const Schedule &s) {
  std::vector<Diagnostic> errors;
  int64_t stages = s.stages(), m = s.microBatches;
  std::map<Action, Position> where;
  std::vector<int64_t> optimizerAt(s.ranks, -1);
  auto quote = [](const Action &a) { return "'" + a.str() + "'"; };
  for (int64_t r = 0; r < s.ranks; ++r)
    for (int64_t i = 0; i < int64_t(s.actions[r].size()); ++i) {
      const Action &a = s.actions[r][i];
      auto bad = [&](const std::string &why) {
        errors.push_back({r, i, quote(a) + ": " + why});
      };
      if (a.kind != ActionKind::Optimizer) {
        if (a.stage < 0 || a.stage >= stages) {
          bad("stage " + std::to_string(a.stage) + " is outside the " +
              std::to_string(stages) + " stages");
          continue;
        }
        if (s.rankOf(a.stage) != r) {
          bad("stage " + std::to_string(a.stage) + " runs on rank " +
              std::to_string(s.rankOf(a.stage)) + ", not here");
          continue;
        }
      }
      if (a.microBatch >= m) {
        bad("micro-batch " + std::to_string(a.microBatch) + " is outside the " +
            std::to_string(m) + " micro-batches");
        continue;
      }
      if (a.kind == ActionKind::Optimizer) { // once per rank
        if (optimizerAt[r] >= 0)
          bad("runs twice (first at action " + std::to_string(optimizerAt[r]) +
              ")");
        optimizerAt[r] = i;
        continue;
      }
      auto [it, fresh] = where.emplace(a, Position{r, i});
      if (!fresh)
        bad("runs twice (first at action " + std::to_string(it->second.second) +
            ")");
    }
  if (!errors.empty())
    return errors;

  auto has = [&](const Action &a) { return where.count(a) != 0; };
  auto before = [&](const Action &a, const Position &p) {
    auto it = where.find(a);
    return it != where.end() && it->second.first == p.first &&
           it->second.second < p.second;
  };
  for (int64_t stage = 0; stage < stages; ++stage) {
    int64_t r = s.rankOf(stage);
    bool split = false;
    for (int64_t i = 0; i < m; ++i)
      split = split || has({ActionKind::Weight, stage, i});
    for (int64_t i = 0; i < m; ++i)
      for (ActionKind k :
           {ActionKind::Forward, ActionKind::Backward, ActionKind::Weight}) {
        if (k == ActionKind::Weight && !split)
          continue;
        Action a{k, stage, i};
        if (!has(a))
          errors.push_back(
              {r, -1,
               "stage " + std::to_string(stage) + " never runs " + quote(a) +
                   (k == ActionKind::Weight
                        ? " (the stage splits its backward: every micro-batch "
                          "needs its W)"
                        : "")});
      }
  }
  // The other half of a send or receive, "'1RECV_F0' on rank 1", when the
  // schedule lacks it; empty when it is there.
  auto missingPeer = [&](const Action &peer) -> std::string {
    bool inside = peer.stage >= 0 && peer.stage < stages;
    if (inside && has(peer))
      return "";
    return quote(peer) + " on rank " +
           std::to_string(inside ? s.rankOf(peer.stage) : -1);
  };
  for (const auto &entry : where) {
    const Action &a = entry.first;
    const Position &pos = entry.second;
    int64_t r = pos.first, i = pos.second;
    auto bad = [&](const std::string &why) {
      errors.push_back({r, i, quote(a) + ": " + why});
    };
    switch (a.kind) {
    case ActionKind::Forward:
      if (a.stage > 0) {
        Action input =
            s.rankOf(a.stage - 1) == r
                ? Action{ActionKind::Forward, a.stage - 1, a.microBatch}
                : Action{ActionKind::RecvForward, a.stage, a.microBatch};
        if (!before(input, pos))
          bad("its input comes from " + quote(input) +
              ", which this rank does not run before it");
      }
      break;
    case ActionKind::Backward: {
      Action forward{ActionKind::Forward, a.stage, a.microBatch};
      if (!before(forward, pos))
        bad("the backward of micro-batch " + std::to_string(a.microBatch) +
            " comes before its forward " + quote(forward));
      if (a.stage + 1 < s.stages()) {
        Action grad =
            s.rankOf(a.stage + 1) == r
                ? Action{ActionKind::Backward, a.stage + 1, a.microBatch}
                : Action{ActionKind::RecvBackward, a.stage, a.microBatch};
        if (!before(grad, pos))
          bad("its output gradient comes from " + quote(grad) +
              ", which this rank does not run before it");
      }
      break;
    }
    case ActionKind::Weight: {
      Action input{ActionKind::Backward, a.stage, a.microBatch};
      if (!before(input, pos))
        bad("the weight gradient comes before the input gradient " +
            quote(input));
      break;
    }
    case ActionKind::SendForward:
    case ActionKind::SendBackward: {
      Action produced{a.kind == ActionKind::SendForward ? ActionKind::Forward
                                                        : ActionKind::Backward,
                      a.stage, a.microBatch};
      if (!before(produced, pos))
        bad("sends what " + quote(produced) +
            " computes, which this rank does not run before it");
      if (std::string peer = missingPeer(matchingRecv(a)); !peer.empty())
        bad("nothing receives it (expected " + peer + ")");
      break;
    }
    case ActionKind::RecvForward:
    case ActionKind::RecvBackward: {
      if (std::string peer = missingPeer(matchingSend(a)); !peer.empty())
        bad("no rank sends it (expected " + peer + ")");
      break;
    }
    case ActionKind::ReduceGrad:
    case ActionKind::Optimizer:
      break;
    }
  }
  std::sort(errors.begin(), errors.end(),
            [](const Diagnostic &x, const Diagnostic &y) {
              return std::tie(x.rank, x.index) < std::tie(y.rank, y.index);
            });
  return errors;
}

SimulationResult mlir::rtx::pipeline::simulate(const Schedule &s,
                                               const ActionCosts &costs) {
  SimulationResult result;
  if (s.ranks < 1 || int64_t(s.actions.size()) != s.ranks) {
    result.errors.push_back({-1, -1, "the schedule has no ranks"});
    return result;
  }
  result.errors = checkStatically(s);
  if (!result.errors.empty())
    return result;

  int64_t stages = s.stages();
  std::vector<bool> split(stages, false);
  for (const auto &rank : s.actions)
    for (const Action &a : rank)
      if (a.kind == ActionKind::Weight)
        split[a.stage] = true;
  auto cost = [&](const Action &a) -> double {
    auto it = costs.perStage.find(a.stage);
    double forward =
        it != costs.perStage.end() ? it->second.first : costs.forward;
    double backward =
        it != costs.perStage.end() ? it->second.second : costs.backward;
    double share = costs.backward > 0 ? backward / costs.backward : 1;
    switch (a.kind) {
    case ActionKind::Forward:
      return forward;
    case ActionKind::Backward:
      return split[a.stage] ? costs.inputGrad * share : backward;
    case ActionKind::Weight:
      return costs.weightGrad * share;
    case ActionKind::ReduceGrad:
      return costs.reduceGrad;
    case ActionKind::Optimizer:
      return costs.optimizer;
    default:
      return 0;
    }
  };

  // Each rank runs its list in order; a receive waits for its send.
  std::map<Action, double> sentAt;
  std::vector<size_t> next(s.ranks, 0);
  std::vector<double> clock(s.ranks, 0);
  result.busy.assign(s.ranks, 0);
  result.timeline.resize(s.ranks);
  std::vector<int64_t> live(stages, 0);
  result.peakActivations.assign(stages, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < s.ranks; ++r)
      while (next[r] < s.actions[r].size()) {
        const Action &a = s.actions[r][next[r]];
        double start = clock[r];
        if (a.kind == ActionKind::RecvForward ||
            a.kind == ActionKind::RecvBackward) {
          auto it = sentAt.find(matchingSend(a));
          if (it == sentAt.end())
            break; // blocked: another rank must go first
          start = std::max(start, it->second + costs.latency);
        }
        double end = start + cost(a);
        if (a.kind == ActionKind::SendForward ||
            a.kind == ActionKind::SendBackward)
          sentAt[a] = end; // eager: posted, never waits for its receive
        if (isCompute(a.kind))
          result.busy[r] += end - start;
        if (a.kind == ActionKind::Forward)
          result.peakActivations[a.stage] =
              std::max(result.peakActivations[a.stage], ++live[a.stage]);
        if ((a.kind == ActionKind::Backward && !split[a.stage]) ||
            a.kind == ActionKind::Weight)
          --live[a.stage]; // its activations are freed
        result.timeline[r].push_back({start, end});
        clock[r] = end;
        ++next[r];
        progress = true;
      }
  }
  // Every rank done, or a deadlock: name each rank that waits and what for.
  for (int64_t r = 0; r < s.ranks; ++r) {
    if (next[r] == s.actions[r].size())
      continue;
    const Action &a = s.actions[r][next[r]];
    Action send = matchingSend(a);
    int64_t peer = s.rankOf(send.stage);
    std::string peerAt = next[peer] < s.actions[peer].size()
                             ? "which itself waits at action " +
                                   std::to_string(next[peer]) + " '" +
                                   s.actions[peer][next[peer]].str() + "'"
                             : "which has finished";
    result.errors.push_back({r, int64_t(next[r]),
                             "'" + a.str() + "' waits forever for '" +
                                 send.str() + "' of rank " +
                                 std::to_string(peer) + ", " + peerAt +
                                 " (a cycle: reorder the sends and receives)"});
  }
  if (!result.errors.empty())
    return result;
  for (double c : clock)
    result.makespan = std::max(result.makespan, c);
  return result;
}
