//===- NodeRounds.cpp - restart rounds across nodes -----------------------===//

#include "NodeRounds.h"

#include "LauncherProcess.h"

#include "rtxrt/core/Tensor.h"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

using namespace rtxlaunch;

NodeRounds::NodeRounds(const Options &options, const std::string &runId,
                       int64_t agentNode, int64_t agentNodes)
    : options_(options), board_(options.store, runId), agentNode_(agentNode),
      agentNodes_(agentNodes) {}

int NodeRounds::enter(const std::string &runId) {
  int round = 0;
  try {
    round = static_cast<int>(
        board_.enterRound(agentNode_, agentNodes_, launcherName()));
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
    return -1;
  }
  if (round > 0)
    std::fprintf(stderr,
                 "rtx-launch: node %lld joins restart round %d of run %s, "
                 "resuming from the newest checkpoint\n",
                 static_cast<long long>(agentNode_), round, runId.c_str());
  return round;
}

void NodeRounds::start(int round) {
  try {
    board_.startRound(round, agentNode_, launcherName());
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
  }
}

static std::string listText(const std::vector<int64_t> &nodes) {
  std::string list;
  for (int64_t m : nodes)
    list += (list.empty() ? "" : ",") + std::to_string(m);
  return list;
}

Seat NodeRounds::meet(int round, int ranks) {
  // A round runs on the nodes whose agents came within --node-wait; the
  // first too, so a job starts on fewer nodes and the others join it.
  std::vector<int64_t> members;
  try {
    members = board_.meetNodes(round, agentNodes_, options_.nodeWait,
                               [] { return forwardedSignal() != 0; });
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
    return {Seat::Stop, 0, 0, 1, std::nullopt};
  }
  if (forwardedSignal())
    return {Seat::Stop, 0, 0, 128 + forwardedSignal(), std::nullopt};
  std::string list = listText(members);
  auto at = std::find(members.begin(), members.end(), agentNode_);
  if (at == members.end()) {
    int code = waitOutside(round, list);
    return {code < 0 ? Seat::Rejoin : Seat::Stop, 0, 0, code, false};
  }
  if (static_cast<int64_t>(members.size()) < options_.minNodes) {
    std::fprintf(stderr,
                 "rtx-launch: error: round %d: node(s) %s came "
                 "within %g s, fewer than --min-nodes %d; stopping (the "
                 "newest committed checkpoint is kept)\n",
                 round, list.c_str(), options_.nodeWait, options_.minNodes);
    return {Seat::Stop, 0, 0, 1, true};
  }
  Seat seat{Seat::Member, at - members.begin(),
            static_cast<int64_t>(members.size()), 0, true};
  std::fprintf(stderr,
               "rtx-launch: node %lld: round %d runs on %lld of "
               "%lld node(s) (%s) with %lld rank(s); this node's are "
               "ranks %lld to %lld\n",
               static_cast<long long>(agentNode_), round,
               static_cast<long long>(seat.nodes),
               static_cast<long long>(agentNodes_), list.c_str(),
               static_cast<long long>(seat.nodes * ranks),
               static_cast<long long>(seat.node * ranks),
               static_cast<long long>(seat.node * ranks + ranks - 1));
  return seat;
}

int NodeRounds::waitOutside(int round, const std::string &list) {
  std::fprintf(stderr,
               "rtx-launch: node %lld: round %d runs on node(s) "
               "%s without it; asking them to take it in at their next "
               "step boundary\n",
               static_cast<long long>(agentNode_), round, list.c_str());
  try {
    board_.askToJoin(round, agentNode_, launcherName());
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
    return 1;
  }
  while (!forwardedSignal()) {
    try {
      if (board_.roundStarted(round + 1, agentNodes_))
        return -1;
      if (std::optional<int> code = board_.jobEnded(round)) {
        std::fprintf(stderr,
                     "rtx-launch: node %lld: the job ended (status %d) "
                     "before it took this node in\n",
                     static_cast<long long>(agentNode_), *code);
        return *code;
      }
      if (std::optional<std::string> why = board_.roundFailure(round + 1)) {
        std::fprintf(stderr, "rtx-launch: error: the job stopped: %s\n",
                     why->c_str());
        return 1;
      }
    } catch (const rtxrt::Error &) {
      // The store is out for now: look again.
    }
    usleep(100000);
  }
  return 128 + forwardedSignal();
}

void NodeRounds::fail(int round, const std::string &why) {
  try {
    board_.failRound(round, why);
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: warning: %s\n", error.what());
  }
}

std::optional<std::string> NodeRounds::failure(int round) {
  try {
    return board_.roundFailure(round);
  } catch (const rtxrt::Error &) {
    return std::nullopt; // the store is out for now: look again later
  }
}

std::optional<std::string> NodeRounds::nodeBack(int round, int64_t roundNodes) {
  if (options_.minNodes == 0 || roundNodes >= agentNodes_)
    return std::nullopt;
  try {
    return board_.joinRequest(round);
  } catch (const rtxrt::Error &) {
    return std::nullopt; // the store is out for now: look again later
  }
}

void NodeRounds::end(int round, int code) {
  try {
    board_.endJob(round, code);
  } catch (const rtxrt::Error &) {
  }
}
