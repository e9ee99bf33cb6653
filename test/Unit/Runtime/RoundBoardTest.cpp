//===- RoundBoardTest.cpp - restart rounds of several nodes, file store ---===//
//
// rtxrt/elastic/RoundBoard.h: agents of several nodes enter the same round,
// a node that comes back fails the round it ran in, a shrunk round's members
// stay as first claimed, and a node outside them asks to be taken in.
//
//===----------------------------------------------------------------------===//

#include "BoardTestUtil.h"

#include "rtxrt/elastic/RoundBoard.h"

#include <gtest/gtest.h>

using namespace rtxrt;
using rtxrt::test::StoreDir;

TEST(RoundBoardTest, KeysAreTheDocumentedSchema) {
  EXPECT_EQ(round_keys::node(2, 1), "round-2.node-1");
  EXPECT_EQ(round_keys::failed(2), "round-2.failed");
  EXPECT_EQ(round_keys::members(2), "round-2.members");
  EXPECT_EQ(round_keys::join(2), "round-2.join");
  EXPECT_EQ(round_keys::ended(2), "round-2.ended");
  StoreDir dir("rtx-round-board-keys");
  RoundBoard board(dir.store(), "job-1");
  board.startRound(0, 1, "b:1");
  board.askToJoin(0, 1, "b:1");
  board.endJob(0, 3);
  EXPECT_EQ(dir.value("job-1", round_keys::node(0, 1)),
            std::optional<std::string>("b:1"));
  EXPECT_EQ(dir.value("job-1", round_keys::join(0)),
            std::optional<std::string>("1 b:1"));
  EXPECT_EQ(dir.value("job-1", round_keys::ended(0)),
            std::optional<std::string>("3"));
}

/// Several nodes restart together: an agent enters the round the others
/// are in, unless its node ran in it already (it was lost and came back):
/// then that round is failed for every node and all start the next.
TEST(RoundBoardTest, AgentsOfSeveralNodesEnterTheSameRound) {
  StoreDir dir("rtx-round-board");
  std::string store = dir.store();
  RoundBoard node0(store, "job-1"), node1(store, "job-1");
  EXPECT_EQ(node0.enterRound(0, 2, "a:1"), 0);
  EXPECT_EQ(node1.enterRound(1, 2, "b:1"), 0);
  EXPECT_FALSE(node0.roundFailure(0));
  // A rank fails: the first reason stays; both agents start round 1.
  node1.failRound(0, "rank 1 on node 1 was killed by signal 9");
  node0.failRound(0, "rank 0 on node 0 exited with status 1");
  EXPECT_EQ(
      node0.roundFailure(0),
      std::optional<std::string>("rank 1 on node 1 was killed by signal 9"));
  node0.startRound(1, 0, "a:1");
  // Node 1's agent is lost and started again: it joins round 1, which
  // node 0 waits in.
  EXPECT_EQ(RoundBoard(store, "job-1").enterRound(1, 2, "b:2"), 1);
  EXPECT_FALSE(node0.roundFailure(1));
  // Lost again after it ran in round 1: round 1 fails, everyone goes to 2.
  EXPECT_EQ(RoundBoard(store, "job-1").enterRound(1, 2, "b:3"), 2);
  EXPECT_EQ(node0.roundFailure(1),
            std::optional<std::string>("node 1 (b:3) came back"));
  // Another run id starts afresh.
  EXPECT_EQ(RoundBoard(store, "job-2").enterRound(1, 2, "b:4"), 0);
}

TEST(RoundBoardTest, NodesMeetWithoutTheLostOneAndTakeItBack) {
  StoreDir dir("rtx-round-board-members");
  std::string store = dir.store();
  RoundBoard node0(store, "job-1"), node1(store, "job-1"),
      node2(store, "job-1");
  for (int64_t i = 0; i < 3; ++i)
    node0.startRound(0, i, "x:" + std::to_string(i));
  // Every node started round 0: the meeting does not wait.
  EXPECT_EQ(node0.meetNodes(0, 3, 60), (std::vector<int64_t>{0, 1, 2}));
  // Node 1 is lost: nodes 0 and 2 start round 1 and wait 0.2 s for it.
  node0.startRound(1, 0, "a:1");
  node2.startRound(1, 2, "c:1");
  EXPECT_EQ(node2.meetNodes(1, 3, 0.2), (std::vector<int64_t>{0, 2}));
  // Node 1 comes back after the members were claimed: the first claim
  // stays, and it enters round 1 outside it (its earlier start was in
  // round 0, which is not the newest).
  EXPECT_EQ(RoundBoard(store, "job-1").enterRound(1, 3, "b:2"), 1);
  EXPECT_EQ(node1.meetNodes(1, 3, 0.2), (std::vector<int64_t>{0, 2}));
  EXPECT_FALSE(node0.roundFailure(1));
  EXPECT_FALSE(node0.joinRequest(1));
  node1.askToJoin(1, 1, "b:2");
  node1.askToJoin(1, 1, "b:3");
  EXPECT_EQ(node0.joinRequest(1), std::optional<std::string>("1 b:2"));
  // Started again while it waits outside: still outside, no failure.
  EXPECT_EQ(RoundBoard(store, "job-1").enterRound(1, 3, "b:4"), 1);
  EXPECT_FALSE(node0.roundFailure(1));
  // The members take it in: round 2 has all three.
  EXPECT_FALSE(node1.roundStarted(2, 3));
  node0.startRound(2, 0, "a:1");
  EXPECT_TRUE(node1.roundStarted(2, 3));
  node1.startRound(2, 1, "b:4");
  node2.startRound(2, 2, "c:1");
  EXPECT_EQ(node1.meetNodes(2, 3, 60), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(node1.jobEnded(2));
  node0.endJob(2, 0);
  EXPECT_EQ(node1.jobEnded(2), std::optional<int>(0));
}

TEST(RoundBoardTest, AMeetingEndsEmptyWhenCancelled) {
  StoreDir dir("rtx-round-board-cancel");
  RoundBoard node0(dir.store(), "job-1");
  node0.startRound(0, 0, "a:1");
  EXPECT_TRUE(node0.meetNodes(0, 2, 60, [] { return true; }).empty());
  EXPECT_FALSE(node0.roundMembers(0));
}
