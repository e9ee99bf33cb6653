//===- InJobRecoveryTest.cpp - whom a replacement heals from --------------===//
//
// program/InJobRecovery.h: a rank that lacks the newest step heals from a
// rank with it that holds the same blocks of every piece of state (a
// replica along an axis no state is split on); where none does, -1 (every
// rank reads the checkpoint). The boards have tests of their own
// (EpochBoardTest, GrowthBoardTest, RoundBoardTest).
//
//===----------------------------------------------------------------------===//

#include "InJobRecovery.h"
#include "Checkpointing.h"

#include "rtxrt/checkpoint/Checkpoint.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
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

/// The mode a program takes from rtx-launch's handoff in its environment.
static RecoveryMode modeFromEnvironment() {
  return RecoveryMode::of(readLaunchHandoff(processEnvironment()));
}

TEST(InJobRecoveryTest, TheEnvironmentChoosesTheMode) {
  unsetenv("RTX_RECOVER");
  unsetenv("RTX_RECOVER_EPOCH");
  EXPECT_FALSE(modeFromEnvironment().inJob);
  setenv("RTX_RECOVER", "in-job", 1);
  setenv("RTX_RECOVER_EPOCH", "3", 1);
  RecoveryMode mode = modeFromEnvironment();
  EXPECT_TRUE(mode.inJob);
  EXPECT_EQ(mode.epoch, 3);
  setenv("RTX_RECOVER_EPOCH", "x", 1);
  EXPECT_THROW(modeFromEnvironment(), Error);
  setenv("RTX_RECOVER", "sometimes", 1);
  EXPECT_THROW(modeFromEnvironment(), Error);
  unsetenv("RTX_RECOVER");
  unsetenv("RTX_RECOVER_EPOCH");
}
