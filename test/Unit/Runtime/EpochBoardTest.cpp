//===- EpochBoardTest.cpp - in-job recovery's epochs over a file store ----===//
//
// rtxrt/elastic/EpochBoard.h: the reports, decisions, shrinks and
// settlements of in-job recovery, and its key schema (the files a file:
// store holds are the keys epoch_keys builds).
//
//===----------------------------------------------------------------------===//

#include "BoardTestUtil.h"

#include "rtxrt/core/Tensor.h"
#include "rtxrt/elastic/EpochBoard.h"

#include <gtest/gtest.h>

using namespace rtxrt;
using rtxrt::test::StoreDir;

TEST(EpochBoardTest, KeysAreTheDocumentedSchema) {
  EXPECT_EQ(epoch_keys::lost(3, 1), "epoch-3.lost.1");
  EXPECT_EQ(epoch_keys::open(3), "epoch-3.open");
  EXPECT_EQ(epoch_keys::joined(3, 2), "epoch-3.joined.2");
  EXPECT_EQ(epoch_keys::shrink(0), "epoch-0.shrink");
  EXPECT_EQ(epoch_keys::saved(0, 4), "epoch-0.saved.4");
  EXPECT_EQ(epoch_keys::loss(5), "epoch-5.loss");
  EXPECT_EQ(epoch_keys::node(5, 1), "epoch-5.node-1");
  StoreDir dir("rtx-epoch-board-keys");
  EpochBoard board(dir.store(), "job-1");
  board.reportLost(2, 1, 17, "connection closed");
  board.open(3, 4);
  board.settleLoss(2, 1, {2, {5, 7}});
  EXPECT_EQ(dir.value("job-1", epoch_keys::lost(2, 1)),
            std::optional<std::string>("17 connection closed"));
  EXPECT_EQ(dir.value("job-1", epoch_keys::open(3)),
            std::optional<std::string>("4"));
  EXPECT_EQ(dir.value("job-1", epoch_keys::node(2, 1)),
            std::optional<std::string>("2 5,7"));
}

TEST(EpochBoardTest, CarriesReportsAndEpochs) {
  StoreDir dir("rtx-epoch-board");
  EpochBoard agent(dir.store(), "job-1");
  EpochBoard rank(dir.store(), "job-1");
  EpochBoard other(dir.store(), "job-2");
  EXPECT_FALSE(agent.lost(0, 1).has_value());
  rank.reportLost(0, 1, 17, "rank 1: connection closed");
  std::optional<LostReport> report = agent.lost(0, 1);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->stepsDone, 17);
  EXPECT_EQ(report->error, "rank 1: connection closed");
  EXPECT_FALSE(agent.lost(1, 1).has_value()); // another epoch
  EXPECT_FALSE(other.lost(0, 1).has_value()); // another run
  EXPECT_EQ(rank.waitDecision(0, 0.05), EpochBoard::Decision::None);
  agent.open(1, 2);
  EXPECT_EQ(rank.waitDecision(0, 0.05), EpochBoard::Decision::Replace);
  EXPECT_FALSE(other.isOpen(1));
  EXPECT_FALSE(agent.hasJoined(1, 1));
  rank.joined(1, 1);
  EXPECT_TRUE(agent.hasJoined(1, 1));
  EXPECT_FALSE(agent.hasJoined(1, 0));
  EXPECT_EQ(EpochBoard::epochRun("job-1", 0), "job-1");
  EXPECT_EQ(EpochBoard::epochRun("job-1", 2), "job-1-epoch2");
}

TEST(EpochBoardTest, WaitingForADecisionEndsWhenCancelled) {
  StoreDir dir("rtx-epoch-board-cancel");
  EpochBoard rank(dir.store(), "job-1");
  EXPECT_EQ(rank.waitDecision(0, 60, [] { return true; }),
            EpochBoard::Decision::None);
}

TEST(EpochBoardTest, CarriesAShrink) {
  StoreDir dir("rtx-epoch-board-shrink");
  EpochBoard agent(dir.store(), "job-1");
  EpochBoard rank(dir.store(), "job-1");
  EXPECT_EQ(rank.waitDecision(0, 0.05), EpochBoard::Decision::None);
  agent.shrink(0, {0, 2, 3});
  EXPECT_EQ(rank.waitDecision(0, 0.05), EpochBoard::Decision::Shrink);
  EXPECT_EQ(rank.shrinking(0), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_FALSE(rank.shrinking(1).has_value());
  EXPECT_FALSE(agent.savedBy(0, 2).has_value());
  rank.saved(0, 2, "");
  rank.saved(0, 3, "No space left on device");
  EXPECT_EQ(agent.savedBy(0, 2), std::optional<std::string>(""));
  EXPECT_EQ(agent.savedBy(0, 3),
            std::optional<std::string>("No space left on device"));
  agent.open(2, 3);
  EXPECT_EQ(rank.waitDecision(1, 0.05), EpochBoard::Decision::Replace);
}

TEST(EpochBoardTest, NodesSettleTheirPartOfALoss) {
  StoreDir dir("rtx-epoch-board-settle");
  EpochBoard node0(dir.store(), "job-1"), node1(dir.store(), "job-1");
  EXPECT_FALSE(node0.lossBegun(0));
  node1.beginLoss(0);
  EXPECT_TRUE(node0.lossBegun(0));
  EXPECT_FALSE(node0.lossBegun(1));
  // Node 1 lost ranks 5 and 7; node 0 lost none.
  node1.settleLoss(0, 1, {2, {5, 7}});
  node0.settleLoss(0, 0, {4, {}});
  std::optional<EpochBoard::NodeLoss> one = node0.settledLoss(0, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->survivors, 2);
  EXPECT_EQ(one->lost, (std::vector<int64_t>{5, 7}));
  std::optional<EpochBoard::NodeLoss> zero = node1.settledLoss(0, 0);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->survivors, 4);
  EXPECT_TRUE(zero->lost.empty());
  EXPECT_FALSE(node0.settledLoss(1, 1));
}

TEST(EpochBoardTest, MalformedValuesAreErrorsNamingTheStore) {
  StoreDir dir("rtx-epoch-board-malformed");
  std::filesystem::create_directories(dir.path / "rtx-recover" / "job-1");
  std::ofstream(dir.path / "rtx-recover" / "job-1" / epoch_keys::shrink(0))
      << "0,x";
  std::ofstream(dir.path / "rtx-recover" / "job-1" / epoch_keys::node(0, 1))
      << "two 5";
  EpochBoard board(dir.store(), "job-1");
  try {
    board.shrinking(0);
    FAIL() << "a malformed shrink was read";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find(dir.path.string()),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(board.settledLoss(0, 1), Error);
}

TEST(EpochBoardTest, AStoreOfNoKnownKindIsRefused) {
  try {
    EpochBoard board("tcp://host:1", "job-1");
    FAIL() << "a store tcp:// was accepted";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("tcp://host:1"), std::string::npos)
        << error.what();
  }
}
