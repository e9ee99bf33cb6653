//===- InJobRecoveryTest.cpp - whom a replacement heals from --------------===//
//
// program/InJobRecovery.h: a rank that lacks the newest step heals from a
// rank with it that holds the same blocks of every piece of state (a
// replica along an axis no state is split on); where none does, -1 (every
// rank reads the checkpoint). Also the recovery board's keys (file store).
//
//===----------------------------------------------------------------------===//

#include "InJobRecovery.h"
#include "Checkpointing.h"

#include "rtxrt/checkpoint/Checkpoint.h"
#include "rtxrt/RecoveryBoard.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::program;

namespace {

ArgSpec state(const std::string &name, Sharding sharding) {
  ArgSpec arg;
  arg.kind = ArgSpec::Param;
  arg.name = name;
  arg.state = "param:" + name;
  arg.shape = {4, 4};
  arg.sharding = std::move(sharding);
  return arg;
}

ProgramSpec meshSpec(std::vector<std::string> axes,
                     std::vector<int64_t> sizes) {
  ProgramSpec spec;
  spec.mesh = MeshLayout(std::move(axes), std::move(sizes));
  return spec;
}

} // namespace

TEST(InJobRecoveryTest, DataParallelRanksHealFromAnySurvivor) {
  ProgramSpec spec = meshSpec({"dp"}, {4});
  spec.args.push_back(state("w", Sharding{{{}, {}}, {}}));
  // Rank 2 was replaced (it resumed from step 4); the others hold step 7.
  EXPECT_EQ(healSources(spec, {7, 7, 4, 7}),
            (std::vector<int64_t>{0, 1, 0, 3}));
}

TEST(InJobRecoveryTest, TensorParallelShardsHealFromTheirDataParallelReplica) {
  // dp=2 x tp=2, rank = dp * 2 + tp; the weight is split over tp.
  ProgramSpec spec = meshSpec({"dp", "tp"}, {2, 2});
  spec.args.push_back(state("w", Sharding{{{"tp"}, {}}, {}}));
  // Rank 1 (dp 0, tp 1) lost: rank 3 (dp 1, tp 1) holds the same shard.
  EXPECT_EQ(healSources(spec, {9, 2, 9, 9}),
            (std::vector<int64_t>{0, 3, 2, 3}));
  // Ranks 1 and 3 both lost: no survivor holds tp shard 1.
  EXPECT_EQ(healSources(spec, {9, 2, 9, 2}),
            (std::vector<int64_t>{0, -1, 2, -1}));
}

TEST(InJobRecoveryTest, ZeroShardsHaveNoReplica) {
  ProgramSpec spec = meshSpec({"dp"}, {2});
  spec.args.push_back(state("w", Sharding{{{}, {}}, {}}));
  ArgSpec flat = state("flat0", Sharding{{{"dp"}}, {}});
  flat.members.push_back(state("m", Sharding{{{}, {}}, {}}));
  spec.args.push_back(flat);
  EXPECT_EQ(healSources(spec, {5, 3}), (std::vector<int64_t>{0, -1}));
  // Every rank at the same step: nothing to heal.
  EXPECT_EQ(healSources(spec, {5, 5}), (std::vector<int64_t>{0, 1}));
}

TEST(InJobRecoveryTest, PipelineStagesHealOnlyWithinTheirStage) {
  // pp=2 x dp=2, rank = pp * 2 + dp; stages hold different parameters.
  ProgramSpec spec = meshSpec({"pp", "dp"}, {2, 2});
  spec.pipelineAxis = "pp";
  spec.args.push_back(state("w", Sharding{{{}, {}}, {}}));
  EXPECT_EQ(healSources(spec, {6, 6, 6, 0}),
            (std::vector<int64_t>{0, 1, 2, 2}));
  EXPECT_EQ(healSources(spec, {6, 6, 0, 0}),
            (std::vector<int64_t>{0, 1, -1, -1}));
}

TEST(InJobRecoveryTest, EveryStageDecidesTheSame) {
  // pp=2 x dp=2: stage 1 holds ZeRO flat buffers, stage 0 does not; a rank
  // of stage 0 decides from the whole program, as a rank of stage 1 does.
  ProgramSpec spec = meshSpec({"pp", "dp"}, {2, 2});
  spec.pipelineAxis = "pp";
  spec.stages.resize(2);
  spec.stages[0].args.push_back(state("w0", Sharding{{{}, {}}, {}}));
  ArgSpec flat = state("flat1", Sharding{{{"dp"}}, {}});
  flat.members.push_back(state("w1", Sharding{{{}, {}}, {}}));
  spec.stages[1].args.push_back(flat);
  EXPECT_EQ(healSources(spec, {6, 6, 6, 0}),
            (std::vector<int64_t>{0, 1, 2, -1}));
  EXPECT_EQ(healSources(spec, {6, 0, 6, 6}),
            (std::vector<int64_t>{0, -1, 2, 3}));
}

TEST(InJobRecoveryTest, DataArgumentsDoNotDecideReplicas) {
  ProgramSpec spec = meshSpec({"dp"}, {2});
  spec.args.push_back(state("w", Sharding{{{}, {}}, {}}));
  ArgSpec batch; // data: split over dp, but no state
  batch.name = "tokens";
  batch.sharding = Sharding{{{"dp"}}, {}};
  spec.args.push_back(batch);
  EXPECT_EQ(healSources(spec, {5, 0}), (std::vector<int64_t>{0, 0}));
}

TEST(InJobRecoveryTest, TheBoardCarriesReportsAndEpochs) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("rtx-recovery-board-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  RecoveryBoard agent("file:" + dir.string(), "job-1");
  RecoveryBoard rank("file:" + dir.string(), "job-1");
  RecoveryBoard other("file:" + dir.string(), "job-2");
  EXPECT_FALSE(agent.lost(0, 1).has_value());
  rank.reportLost(0, 1, 17, "rank 1: connection closed");
  std::optional<LostReport> report = agent.lost(0, 1);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->stepsDone, 17);
  EXPECT_EQ(report->error, "rank 1: connection closed");
  EXPECT_FALSE(agent.lost(1, 1).has_value()); // another epoch
  EXPECT_FALSE(other.lost(0, 1).has_value()); // another run
  EXPECT_EQ(rank.waitDecision(0, 0.05), RecoveryBoard::Decision::None);
  agent.open(1, 2);
  EXPECT_EQ(rank.waitDecision(0, 0.05), RecoveryBoard::Decision::Replace);
  EXPECT_FALSE(other.isOpen(1));
  EXPECT_EQ(RecoveryBoard::epochRun("job-1", 0), "job-1");
  EXPECT_EQ(RecoveryBoard::epochRun("job-1", 2), "job-1-epoch2");
  std::filesystem::remove_all(dir);
}

namespace {

/// A temporary directory, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string &name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

/// Rank `rank`'s block of the 4x4 tensor 0..15 split over `tp` columns.
Tensor columnsOf(int64_t tp, int64_t parts) {
  int64_t width = 4 / parts;
  std::vector<float> values;
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t col = tp * width; col < (tp + 1) * width; ++col)
      values.push_back(static_cast<float>(row * 4 + col));
  return Tensor::fromVector(values, {4, width});
}

} // namespace

TEST(InJobRecoveryTest, TheBoardCarriesAShrink) {
  TempDir dir("rtx-recovery-shrink");
  RecoveryBoard agent("file:" + dir.path.string(), "job-1");
  RecoveryBoard rank("file:" + dir.path.string(), "job-1");
  EXPECT_EQ(rank.waitDecision(0, 0.05), RecoveryBoard::Decision::None);
  agent.shrink(0, {0, 2, 3});
  EXPECT_EQ(rank.waitDecision(0, 0.05), RecoveryBoard::Decision::Shrink);
  EXPECT_EQ(rank.shrinking(0), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_FALSE(rank.shrinking(1).has_value());
  EXPECT_FALSE(agent.savedBy(0, 2).has_value());
  rank.saved(0, 2, "");
  rank.saved(0, 3, "No space left on device");
  EXPECT_EQ(agent.savedBy(0, 2), std::optional<std::string>(""));
  EXPECT_EQ(agent.savedBy(0, 3),
            std::optional<std::string>("No space left on device"));
  agent.open(2, 3);
  EXPECT_EQ(rank.waitDecision(1, 0.05), RecoveryBoard::Decision::Replace);
}

TEST(InJobRecoveryTest, OffersAndLaunchesAreNumberedInOrder) {
  TempDir dir("rtx-recovery-offers");
  RecoveryBoard node("file:" + dir.path.string(), "job-1");
  RecoveryBoard launcher("file:" + dir.path.string(), "job-1");
  EXPECT_FALSE(launcher.offer(0).has_value());
  EXPECT_EQ(node.offerRanks(2, "node-a"), 0);
  EXPECT_EQ(node.offerRanks(1, "node-b"), 1);
  EXPECT_EQ(launcher.offer(0), std::optional<int64_t>(2));
  EXPECT_EQ(launcher.offer(1), std::optional<int64_t>(1));
  // A taken offer stays taken for the next launch of the run id.
  EXPECT_FALSE(launcher.offerTaken(0));
  EXPECT_TRUE(launcher.takeOffer(0, "host:1"));
  EXPECT_FALSE(RecoveryBoard("file:" + dir.path.string(), "job-1")
                   .takeOffer(0, "host:2"));
  EXPECT_TRUE(
      RecoveryBoard("file:" + dir.path.string(), "job-1").offerTaken(0));
  EXPECT_FALSE(launcher.offerTaken(1));
  // Launches count apart from offers, and another run id has its own.
  EXPECT_EQ(launcher.claimLaunch("host:1"), 0);
  EXPECT_EQ(launcher.claimLaunch("host:2"), 1);
  EXPECT_EQ(
      RecoveryBoard("file:" + dir.path.string(), "job-2").claimLaunch("x"), 0);
  EXPECT_FALSE(RecoveryBoard("file:" + dir.path.string(), "job-2").offer(0));
}

/// Offers and launches are numbered by writers that race (nodes offering
/// at once, two launches of one run id): each number goes to one writer.
/// The processes start together at a barrier file, so their claims
/// overlap.
TEST(InJobRecoveryTest, WritersAtOnceClaimDistinctNumbers) {
  TempDir dir("rtx-recovery-claims");
  std::string store = "file:" + dir.path.string();
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
        int64_t n = RecoveryBoard(store, "job-1")
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
  RecoveryBoard reader(store, "job-1");
  for (int64_t n = 0; n < kWriters; ++n)
    EXPECT_EQ(reader.offer(n), std::optional<int64_t>(1));
}

/// Several nodes restart together: an agent enters the round the others
/// are in, unless its node ran in it already (it was lost and came back):
/// then that round is failed for every node and all start the next.
TEST(InJobRecoveryTest, AgentsOfSeveralNodesEnterTheSameRound) {
  TempDir dir("rtx-recovery-rounds");
  std::string store = "file:" + dir.path.string();
  RecoveryBoard node0(store, "job-1"), node1(store, "job-1");
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
  EXPECT_EQ(RecoveryBoard(store, "job-1").enterRound(1, 2, "b:2"), 1);
  EXPECT_FALSE(node0.roundFailure(1));
  // Lost again after it ran in round 1: round 1 fails, everyone goes to 2.
  EXPECT_EQ(RecoveryBoard(store, "job-1").enterRound(1, 2, "b:3"), 2);
  EXPECT_EQ(node0.roundFailure(1),
            std::optional<std::string>("node 1 (b:3) came back"));
  // Another run id starts afresh.
  EXPECT_EQ(RecoveryBoard(store, "job-2").enterRound(1, 2, "b:4"), 0);
}

TEST(InJobRecoveryTest, NodesMeetWithoutTheLostOneAndTakeItBack) {
  TempDir dir("rtx-recovery-members");
  std::string store = "file:" + dir.path.string();
  RecoveryBoard node0(store, "job-1"), node1(store, "job-1"),
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
  EXPECT_EQ(RecoveryBoard(store, "job-1").enterRound(1, 3, "b:2"), 1);
  EXPECT_EQ(node1.meetNodes(1, 3, 0.2), (std::vector<int64_t>{0, 2}));
  EXPECT_FALSE(node0.roundFailure(1));
  EXPECT_FALSE(node0.joinRequest(1));
  node1.askToJoin(1, 1, "b:2");
  node1.askToJoin(1, 1, "b:3");
  EXPECT_EQ(node0.joinRequest(1), std::optional<std::string>("1 b:2"));
  // Started again while it waits outside: still outside, no failure.
  EXPECT_EQ(RecoveryBoard(store, "job-1").enterRound(1, 3, "b:4"), 1);
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

TEST(InJobRecoveryTest, NodesSettleTheirPartOfALoss) {
  TempDir dir("rtx-recovery-settle");
  std::string store = "file:" + dir.path.string();
  RecoveryBoard node0(store, "job-1"), node1(store, "job-1");
  EXPECT_FALSE(node0.lossBegun(0));
  node1.beginLoss(0);
  EXPECT_TRUE(node0.lossBegun(0));
  EXPECT_FALSE(node0.lossBegun(1));
  // Node 1 lost ranks 5 and 7; node 0 lost none.
  node1.settleLoss(0, 1, {2, {5, 7}});
  node0.settleLoss(0, 0, {4, {}});
  std::optional<RecoveryBoard::NodeLoss> one = node0.settledLoss(0, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->survivors, 2);
  EXPECT_EQ(one->lost, (std::vector<int64_t>{5, 7}));
  std::optional<RecoveryBoard::NodeLoss> zero = node1.settledLoss(0, 0);
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->survivors, 4);
  EXPECT_TRUE(zero->lost.empty());
  EXPECT_FALSE(node0.settledLoss(1, 1));
}

TEST(InJobRecoveryTest, SurvivorsSaveOneCopyOfEachBlock) {
  // dp=2 x tp=2, rank = dp * 2 + tp: the weight split over tp, the bias
  // whole on every rank. Rank 3 (dp 1, tp 1) is lost; rank 1 holds its
  // shard. The survivors' parts must tile both tensors exactly (the commit
  // checks it) and read back as the whole.
  ProgramSpec spec = meshSpec({"dp", "tp"}, {2, 2});
  ArgSpec w = state("w", Sharding{{{}, {"tp"}}, {}});
  w.shape = {4, 2};
  spec.args.push_back(w);
  spec.args.push_back(state("b", Sharding{{{}, {}}, {}}));
  TempDir dir("rtx-survivor-save");
  std::string root = (dir.path / "ck").string();
  std::vector<int64_t> survivors = {0, 1, 2};
  ProgramDevice device(nullptr, Placement{});
  int64_t chunks = 0;
  for (int64_t rank : survivors) {
    std::vector<Tensor> args = {columnsOf(rank % 2, 2), columnsOf(0, 1)};
    chunks += writeSurvivorPart(spec, device, args, root, 7, rank, survivors);
  }
  EXPECT_EQ(chunks, 3); // two shards of w, one copy of b
  checkpoint::Manifest manifest =
      checkpoint::commitCheckpoint(root, 7, 3, {{"steps_done", "7"}});
  EXPECT_EQ(manifest.writers, 3);
  checkpoint::CheckpointReader reader(root + "/step-00000007");
  Tensor whole = columnsOf(0, 1);
  for (const char *key : {"param:w", "param:b"}) {
    Tensor read = reader.read(key);
    ASSERT_EQ(read.shape(), whole.shape()) << key;
    EXPECT_EQ(std::memcmp(read.raw(), whole.raw(), whole.nbytes()), 0) << key;
  }
  // Without a survivor holding tp shard 1 (ranks 1 and 3 lost), the parts
  // leave a gap, and the commit refuses it.
  std::string gap = (dir.path / "gap").string();
  for (int64_t rank : {0, 2}) {
    std::vector<Tensor> args = {columnsOf(0, 2), columnsOf(0, 1)};
    writeSurvivorPart(spec, device, args, gap, 7, rank, {0, 2});
  }
  EXPECT_THROW(checkpoint::commitCheckpoint(gap, 7, 2, {}), Error);
}

TEST(InJobRecoveryTest, TheEnvironmentChoosesTheMode) {
  unsetenv("RTX_RECOVER");
  unsetenv("RTX_RECOVER_EPOCH");
  EXPECT_FALSE(RecoveryMode::fromEnvironment().inJob);
  setenv("RTX_RECOVER", "in-job", 1);
  setenv("RTX_RECOVER_EPOCH", "3", 1);
  RecoveryMode mode = RecoveryMode::fromEnvironment();
  EXPECT_TRUE(mode.inJob);
  EXPECT_EQ(mode.epoch, 3);
  setenv("RTX_RECOVER_EPOCH", "x", 1);
  EXPECT_THROW(RecoveryMode::fromEnvironment(), Error);
  setenv("RTX_RECOVER", "sometimes", 1);
  EXPECT_THROW(RecoveryMode::fromEnvironment(), Error);
  unsetenv("RTX_RECOVER");
  unsetenv("RTX_RECOVER_EPOCH");
}
