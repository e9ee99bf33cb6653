//===- GrowthBoardTest.cpp - offers of ranks over a file store ------------===//
//
// rtxrt/elastic/GrowthBoard.h: offers of ranks and launches are numbered in
// order, each number goes to one writer also when writers race, and an
// offer is taken once across launches of a run id.
//
//===----------------------------------------------------------------------===//

#include "BoardTestUtil.h"

#include "rtxrt/core/Tensor.h"
#include "rtxrt/elastic/GrowthBoard.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include <sys/wait.h>

using namespace rtxrt;
using rtxrt::test::StoreDir;

TEST(GrowthBoardTest, KeysAreTheDocumentedSchema) {
  EXPECT_EQ(growth_keys::offer(2), "join.2");
  EXPECT_EQ(growth_keys::taken(2), "join.2.taken");
  EXPECT_EQ(growth_keys::launch(0), "launch.0");
  StoreDir dir("rtx-growth-board-keys");
  GrowthBoard board(dir.store(), "job-1");
  board.offerRanks(3, "host:7");
  board.takeOffer(0, "host:8");
  board.claimLaunch("host:9");
  EXPECT_EQ(dir.value("job-1", growth_keys::offer(0)),
            std::optional<std::string>("3 host:7"));
  EXPECT_EQ(dir.value("job-1", growth_keys::taken(0)),
            std::optional<std::string>("host:8"));
  EXPECT_EQ(dir.value("job-1", growth_keys::launch(0)),
            std::optional<std::string>("host:9"));
}

TEST(GrowthBoardTest, OffersAndLaunchesAreNumberedInOrder) {
  StoreDir dir("rtx-growth-board");
  GrowthBoard node(dir.store(), "job-1");
  GrowthBoard launcher(dir.store(), "job-1");
  EXPECT_FALSE(launcher.offer(0).has_value());
  EXPECT_EQ(node.offerRanks(2, "node-a"), 0);
  EXPECT_EQ(node.offerRanks(1, "node-b"), 1);
  EXPECT_EQ(launcher.offer(0), std::optional<int64_t>(2));
  EXPECT_EQ(launcher.offer(1), std::optional<int64_t>(1));
  // A taken offer stays taken for the next launch of the run id.
  EXPECT_FALSE(launcher.offerTaken(0));
  EXPECT_TRUE(launcher.takeOffer(0, "host:1"));
  EXPECT_FALSE(GrowthBoard(dir.store(), "job-1").takeOffer(0, "host:2"));
  EXPECT_TRUE(GrowthBoard(dir.store(), "job-1").offerTaken(0));
  EXPECT_FALSE(launcher.offerTaken(1));
  // Launches count apart from offers, and another run id has its own.
  EXPECT_EQ(launcher.claimLaunch("host:1"), 0);
  EXPECT_EQ(launcher.claimLaunch("host:2"), 1);
  EXPECT_EQ(GrowthBoard(dir.store(), "job-2").claimLaunch("x"), 0);
  EXPECT_FALSE(GrowthBoard(dir.store(), "job-2").offer(0));
}

TEST(GrowthBoardTest, AnOfferOfNoRanksIsAnError) {
  StoreDir dir("rtx-growth-board-bad");
  std::filesystem::create_directories(dir.path / "rtx-recover" / "job-1");
  std::ofstream(dir.path / "rtx-recover" / "job-1" / growth_keys::offer(0))
      << "0 host:1";
  GrowthBoard board(dir.store(), "job-1");
  try {
    board.offer(0);
    FAIL() << "an offer of 0 ranks was read";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("join.0"), std::string::npos)
        << error.what();
  }
}

/// Offers are numbered by writers that race (nodes offering at once): each
/// number goes to one writer. The processes start together at a barrier
/// file, so their claims overlap.
TEST(GrowthBoardTest, WritersAtOnceClaimDistinctNumbers) {
  StoreDir dir("rtx-growth-board-claims");
  std::string store = dir.store();
  std::string go = (dir.path / "go").string();
  constexpr int kWriters = 8;
  std::vector<pid_t> writers;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child only claims and exits: no gtest assertion, no exception
      // out of it (it would run the rest of the suite in the child).
      int code = 0;
      try {
        while (access(go.c_str(), F_OK) != 0)
          usleep(100);
        int64_t n = GrowthBoard(store, "job-1")
                        .offerRanks(1, "writer-" + std::to_string(w));
        std::ofstream(dir.path / ("claimed-" + std::to_string(w))) << n;
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    writers.push_back(pid);
  }
  std::ofstream(go) << "1";
  for (pid_t pid : writers) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<int64_t> numbers;
  for (int w = 0; w < kWriters; ++w) {
    std::ifstream in(dir.path / ("claimed-" + std::to_string(w)));
    int64_t n = -1;
    in >> n;
    numbers.insert(n);
  }
  EXPECT_EQ(numbers.size(), size_t(kWriters));
  EXPECT_EQ(*numbers.begin(), 0);
  EXPECT_EQ(*numbers.rbegin(), kWriters - 1);
  // Each number's offer is its writer's.
  GrowthBoard reader(store, "job-1");
  for (int64_t n = 0; n < kWriters; ++n)
    EXPECT_EQ(reader.offer(n), std::optional<int64_t>(1));
}
