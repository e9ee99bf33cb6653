//===- CheckpointTest.cpp - sharded, crash-safe checkpoints ---------------===//
//
// Chunks written by N ranks read back as any block (N -> M); a checkpoint
// whose chunks do not tile a tensor is never committed; torn and corrupt
// checkpoints are skipped with a warning naming them; a crash at each
// durability point of a save leaves the previous checkpoint (or the whole
// new one) findable; retention keeps the newest K; a full disk is an error.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/checkpoint/Checkpoint.h"

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::checkpoint;
using namespace rtxrt::test;
namespace fs = std::filesystem;

namespace {

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "rtx-checkpoint-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

/// The block [offsets, offsets + shape) of a row-major f32 2-D tensor.
Tensor slice2d(const Tensor &t, int64_t r0, int64_t c0, int64_t rows,
               int64_t cols) {
  Tensor out({rows, cols}, DType::F32);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out.data<float>()[r * cols + c] =
          t.data<float>()[(r0 + r) * t.dim(1) + c0 + c];
  return out;
}

void expectBitEqual(const Tensor &a, const Tensor &b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

const TensorInfo kWeight{"layer0.w", DType::F32, {7, 9}};
const TensorInfo kBias{"layer0.b", DType::F32, {9}};

/// Saves step `step`: the weight split by columns over three ranks (as
/// tp=3 would hold it), the bias whole on rank 0.
void saveColumnSplit(const std::string &root, int64_t step, const Tensor &w,
                     const Tensor &b) {
  for (int64_t rank = 0; rank < 3; ++rank) {
    ShardWriter writer(root, step, rank);
    writer.add(kWeight, {0, 3 * rank}, slice2d(w, 0, 3 * rank, 7, 3),
               "rank=" + std::to_string(rank) + " mesh=tp:3 sharding=[-,tp]");
    if (rank == 0)
      writer.add(kBias, {0}, b);
    writer.finish();
  }
  commitCheckpoint(root, step, 3, {{"mesh", "tp:3"}});
}

void flipByte(const std::string &path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x5a));
}

/// Rewrites the manifest of checkpoint `dir` through `edit`, its CRC32C
/// made to match again: a change the checksum cannot catch (a hand edit,
/// another tool, a bug in a writer).
void editManifest(const std::string &dir,
                  const std::function<void(nlohmann::json &)> &edit) {
  std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  nlohmann::json body = nlohmann::json::parse(in);
  body.erase("body_crc32c");
  edit(body);
  std::string text = body.dump();
  body["body_crc32c"] = crc32c(text.data(), text.size());
  std::ofstream(path, std::ios::trunc) << body.dump(1) << "\n";
}

std::string join(const std::vector<std::string> &lines) {
  std::string all;
  for (const std::string &l : lines)
    all += l + "\n";
  return all;
}

} // namespace

TEST(Crc32cTest, KnownAnswerAndStreaming) {
  const char *text = "123456789";
  EXPECT_EQ(crc32c(text, 9), 0xE3069283u); // the CRC-32C check value
  EXPECT_EQ(crc32c(text + 4, 5, crc32c(text, 4)), 0xE3069283u);
  EXPECT_EQ(crc32c(text, 0), 0u);
}

TEST_F(CheckpointTest, ColumnShardsReadBackAsRowBlocks) {
  Tensor w = randomTensor({7, 9}, DType::F32, 1);
  Tensor b = randomTensor({9}, DType::F32, 2);
  saveColumnSplit(root_, 10, w, b);

  std::vector<std::string> warnings;
  auto latest = findLatest(root_, Verify::Chunks, &warnings);
  ASSERT_TRUE(latest.has_value()) << join(warnings);
  EXPECT_EQ(latest->step, 10);
  EXPECT_TRUE(warnings.empty()) << join(warnings);

  CheckpointReader reader(latest->dir);
  EXPECT_EQ(reader.manifest().writers, 3);
  EXPECT_EQ(reader.manifest().chunks.size(), 4u);
  EXPECT_EQ(reader.manifest().metadata.at("mesh"), "tp:3");
  expectBitEqual(reader.read("layer0.w"), w);
  expectBitEqual(reader.read("layer0.b"), b);
  // Two ranks of another plan split the rows (4 + 3): each block spans all
  // three column chunks.
  expectBitEqual(reader.read("layer0.w", {0, 0}, {4, 9}),
                 slice2d(w, 0, 0, 4, 9));
  expectBitEqual(reader.read("layer0.w", {4, 0}, {3, 9}),
                 slice2d(w, 4, 0, 3, 9));
  // An odd block inside two chunks.
  expectBitEqual(reader.read("layer0.w", {1, 2}, {5, 3}),
                 slice2d(w, 1, 2, 5, 3));
}

TEST_F(CheckpointTest, BadBlocksAndLookupsAreErrorsNamingTheTensor) {
  ShardWriter writer(root_, 1, 0);
  try {
    writer.add(kWeight, {0, 7}, Tensor({7, 3}, DType::F32));
    FAIL() << "a block outside its tensor was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("layer0.w block at [0, 7]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(writer.add(kWeight, {0, 0}, Tensor({7, 3}, DType::F64)), Error);
  writer.add(kWeight, {0, 0}, Tensor({7, 9}, DType::F32));
  writer.finish();
  commitCheckpoint(root_, 1, 1, {});
  CheckpointReader reader(root_ + "/" + checkpointDirName(1));
  EXPECT_THROW(reader.read("no.such.tensor"), Error);
  EXPECT_THROW(reader.read("layer0.w", {5, 0}, {3, 9}), Error);
}

TEST_F(CheckpointTest, ChunksThatDoNotTileATensorAreNeverCommitted) {
  Tensor w = randomTensor({7, 9}, DType::F32, 3);
  {
    // Rank 1's chunk is missing: a gap.
    ShardWriter a(root_, 1, 0), b(root_, 1, 1);
    a.add(kWeight, {0, 0}, slice2d(w, 0, 0, 7, 3));
    b.add(kWeight, {0, 6}, slice2d(w, 0, 6, 7, 3));
    a.finish();
    b.finish();
    try {
      commitCheckpoint(root_, 1, 2, {});
      FAIL() << "a checkpoint with a gap was committed";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("cover 42 of its 63 elements"),
                std::string::npos)
          << e.what();
    }
  }
  {
    // Two ranks wrote the same columns.
    ShardWriter a(root_, 2, 0), b(root_, 2, 1);
    a.add(kWeight, {0, 0}, slice2d(w, 0, 0, 7, 5));
    b.add(kWeight, {0, 4}, slice2d(w, 0, 4, 7, 5));
    a.finish();
    b.finish();
    EXPECT_THROW(commitCheckpoint(root_, 2, 2, {}), Error);
  }
  {
    // A rank that never finished.
    ShardWriter a(root_, 3, 0), b(root_, 3, 1);
    a.add(kWeight, {0, 0}, w);
    a.finish();
    try {
      commitCheckpoint(root_, 3, 2, {});
      FAIL() << "a checkpoint missing a rank's index was committed";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("rank 1 did not finish"),
                std::string::npos)
          << e.what();
    }
  }
  std::vector<std::string> warnings;
  EXPECT_FALSE(findLatest(root_, Verify::Manifest, &warnings).has_value());
  EXPECT_EQ(warnings.size(), 3u) << join(warnings);
}

TEST_F(CheckpointTest, TornAndCorruptCheckpointsAreSkippedWithAWarning) {
  Tensor w = randomTensor({7, 9}, DType::F32, 4);
  Tensor b = randomTensor({9}, DType::F32, 5);
  saveColumnSplit(root_, 10, w, b);
  saveColumnSplit(root_, 20, w, b);
  saveColumnSplit(root_, 30, w, b);
  // 40: the chunks are there, the manifest never was (torn).
  {
    ShardWriter writer(root_, 40, 0);
    writer.add(kWeight, {0, 0}, w);
    writer.finish();
  }
  // 30: a flipped byte in a chunk; 20: in the manifest.
  std::string s30 = root_ + "/" + checkpointDirName(30);
  std::string s20 = root_ + "/" + checkpointDirName(20);
  flipByte(s30 + "/rank-00001.data", 17);
  flipByte(s20 + "/manifest.json", 40);

  std::vector<std::string> warnings;
  auto latest = findLatest(root_, Verify::Chunks, &warnings);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 10);
  ASSERT_EQ(warnings.size(), 3u) << join(warnings);
  EXPECT_NE(warnings[0].find("step-00000040: no manifest.json"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("step-00000030"), std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[1].find("fails its CRC32C"), std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[2].find("step-00000020"), std::string::npos)
      << warnings[2];
  expectBitEqual(CheckpointReader(latest->dir).read("layer0.w"), w);

  // Checking only manifests finds 30; reading its bad chunk still fails.
  auto quick = findLatest(root_, Verify::Manifest, nullptr);
  ASSERT_TRUE(quick.has_value());
  EXPECT_EQ(quick->step, 30);
  CheckpointReader reader(quick->dir);
  EXPECT_THROW(reader.read("layer0.w"), Error);
  // The bias lies in rank 0's file, untouched: still readable.
  expectBitEqual(reader.read("layer0.b"), b);
}

TEST_F(CheckpointTest, AManifestWhoseChunksDoNotTileIsSkippedNamingTheChunk) {
  Tensor w = randomTensor({7, 9}, DType::F32, 31);
  Tensor b = randomTensor({9}, DType::F32, 32);
  struct Case {
    const char *what;
    std::function<void(nlohmann::json &)> edit;
    const char *named; // in the warning
  };
  std::vector<Case> cases = {
      {"the bias's chunk left out",
       [](nlohmann::json &m) { m["chunks"].erase(1); },
       "the chunks of layer0.b[9] cover 0 of its 9 elements"},
      {"a negative offset",
       [](nlohmann::json &m) { m["chunks"][2]["offsets"][1] = -8; },
       "the chunk of layer0.w at [0, -8] of shape [7, 3] in rank-00001.data "
       "reaches outside"},
      {"a negative byte offset",
       [](nlohmann::json &m) { m["chunks"][3]["byte_offset"] = -8; },
       "the chunk of layer0.w at [0, 6] of shape [7, 3] in rank-00002.data "
       "starts at byte -8"},
      {"two chunks over the same columns",
       [](nlohmann::json &m) { m["chunks"][2]["offsets"][1] = 0; },
       "overlaps the one at [0, 0]"},
  };
  saveColumnSplit(root_, 10, w, b);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    saveColumnSplit(root_, 20, w, b);
    std::string dir = root_ + "/" + checkpointDirName(20);
    editManifest(dir, c.edit);
    std::vector<std::string> warnings;
    auto latest = findLatest(root_, Verify::Manifest, &warnings);
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->step, 10);
    ASSERT_EQ(warnings.size(), 1u) << join(warnings);
    EXPECT_NE(warnings[0].find(c.named), std::string::npos) << warnings[0];
    EXPECT_THROW(CheckpointReader{dir}, Error);
  }
}

TEST_F(CheckpointTest, RetentionKeepsTheNewestK) {
  Tensor w = randomTensor({7, 9}, DType::F32, 6);
  Tensor b = randomTensor({9}, DType::F32, 7);
  for (int64_t step : {1, 2, 3, 5, 8})
    saveColumnSplit(root_, step, w, b);
  ShardWriter(root_, 4, 0).finish(); // a torn save older than the newest
  ShardWriter(root_, 9, 0).finish(); // one newer: maybe still in flight
  auto removed = retainNewest(root_, 2);
  EXPECT_EQ(removed.size(), 4u) << join(removed);
  std::vector<int64_t> left;
  for (const CheckpointRef &c : findCommitted(root_, Verify::Chunks, nullptr))
    left.push_back(c.step);
  EXPECT_EQ(left, (std::vector<int64_t>{5, 8}));
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(9)));
  EXPECT_FALSE(fs::exists(root_ + "/" + checkpointDirName(4)));
}

TEST_F(CheckpointTest, RetentionNeverKeepsACorruptCheckpointAlone) {
  Tensor w = randomTensor({7, 9}, DType::F32, 41);
  Tensor b = randomTensor({9}, DType::F32, 42);
  for (int64_t step : {2, 4, 6})
    saveColumnSplit(root_, step, w, b);
  flipByte(root_ + "/" + checkpointDirName(6) + "/rank-00000.data", 5);
  // A --resume skipped step 6, resumed from 4 and committed step 5.
  saveColumnSplit(root_, 5, w, b);
  std::vector<std::string> removed = retainNewest(root_, 1);
  auto latest = findLatest(root_, Verify::Chunks, nullptr);
  ASSERT_TRUE(latest.has_value()) << "removed: " << join(removed);
  EXPECT_EQ(latest->step, 5);
  // The corrupt newer one stays (a later --resume skips it, naming it).
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(6)));
  EXPECT_FALSE(fs::exists(root_ + "/" + checkpointDirName(4)));

  // When none is known whole, nothing goes.
  flipByte(root_ + "/" + checkpointDirName(5) + "/rank-00001.data", 5);
  std::vector<std::string> warnings;
  EXPECT_TRUE(Retention(root_, 1).apply(&warnings).empty());
  EXPECT_EQ(warnings.size(), 2u) << join(warnings);
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(5)));

  // What this process committed counts unread; the corrupt ones older than
  // it go.
  saveColumnSplit(root_, 7, w, b);
  Retention retention(root_, 2);
  retention.committedHere(7);
  warnings.clear();
  removed = retention.apply(&warnings);
  EXPECT_EQ(warnings.size(), 2u) << join(warnings); // steps 5 and 6
  EXPECT_EQ(removed.size(), 2u) << join(removed);
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(7)));
}

TEST_F(CheckpointTest, RetentionTakesWhatAResumeFoundCorruptWithoutReadingIt) {
  Tensor w = randomTensor({7, 9}, DType::F32, 43);
  Tensor b = randomTensor({9}, DType::F32, 44);
  for (int64_t step : {4, 6})
    saveColumnSplit(root_, step, w, b);
  // Step 6 is whole on disk: only what the resume said makes it corrupt,
  // so a retention that read it again would count it and remove step 5.
  saveColumnSplit(root_, 5, w, b);
  Retention retention(root_, 1);
  retention.committedHere(5);
  retention.knownCorrupt(root_ + "/" + checkpointDirName(6) + "/", "skipped");
  std::vector<std::string> warnings;
  std::vector<std::string> removed = retention.apply(&warnings);
  ASSERT_EQ(warnings.size(), 1u) << join(warnings);
  EXPECT_NE(warnings[0].find("is corrupt, not counted among those kept: "
                             "skipped"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(5)));
  EXPECT_TRUE(fs::exists(root_ + "/" + checkpointDirName(6)));
  EXPECT_FALSE(fs::exists(root_ + "/" + checkpointDirName(4)));
  // Said once.
  warnings.clear();
  retention.apply(&warnings);
  EXPECT_TRUE(warnings.empty()) << join(warnings);
}

TEST_F(CheckpointTest, ACrashAtEveryDurabilityPointLosesNothingCommitted) {
  Tensor w1 = randomTensor({7, 9}, DType::F32, 8);
  Tensor w2 = randomTensor({7, 9}, DType::F32, 9);
  Tensor b = randomTensor({9}, DType::F32, 10);
  saveColumnSplit(root_, 1, w1, b);
  struct Case {
    const char *point;
    int64_t latest; // what a restart finds
  };
  for (Case c : {Case{"chunk:0", 1}, Case{"before-index-rename", 1},
                 Case{"before-manifest-rename", 1},
                 Case{"before-directory-fsync", 2}, Case{"after-commit", 2}}) {
    SCOPED_TRACE(c.point);
    fs::remove_all(root_ + "/" + checkpointDirName(2));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      setenv("RTX_FAULT_CHECKPOINT_CRASH_AT", c.point, 1);
      try {
        saveColumnSplit(root_, 2, w2, b);
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the failpoint did not fire";
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    std::vector<std::string> warnings;
    auto latest = findLatest(root_, Verify::Chunks, &warnings);
    ASSERT_TRUE(latest.has_value()) << join(warnings);
    EXPECT_EQ(latest->step, c.latest) << join(warnings);
    expectBitEqual(CheckpointReader(latest->dir).read("layer0.w"),
                   c.latest == 1 ? w1 : w2);
    // The next save of the same step replaces what the crash left.
    saveColumnSplit(root_, 2, w2, b);
    auto after = findLatest(root_, Verify::Chunks, nullptr);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->step, 2);
    expectBitEqual(CheckpointReader(after->dir).read("layer0.w"), w2);
  }
}

TEST_F(CheckpointTest, AFullDiskFailsTheSaveAndKeepsThePreviousCheckpoint) {
  Tensor w = randomTensor({7, 9}, DType::F32, 11);
  Tensor b = randomTensor({9}, DType::F32, 12);
  saveColumnSplit(root_, 1, w, b);
  setenv("RTX_FAULT_FAIL_WRITE_AFTER_BYTES", "50", 1);
  try {
    saveColumnSplit(root_, 2, w, b);
    unsetenv("RTX_FAULT_FAIL_WRITE_AFTER_BYTES");
    FAIL() << "a save on a full disk succeeded";
  } catch (const Error &e) {
    unsetenv("RTX_FAULT_FAIL_WRITE_AFTER_BYTES");
    EXPECT_NE(std::string(e.what()).find("No space left on device"),
              std::string::npos)
        << e.what();
  }
  auto latest = findLatest(root_, Verify::Chunks, nullptr);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 1);
}

TEST(BoxesOfRangeTest, EveryRangeIsTiledInOrderByFewBoxes) {
  for (Shape shape :
       {Shape{5}, Shape{3, 4}, Shape{2, 3, 5}, Shape{1, 7, 1, 3}}) {
    int64_t n = numElements(shape);
    for (int64_t begin = 0; begin <= n; ++begin)
      for (int64_t end = begin; end <= n; ++end) {
        std::vector<Box> boxes = boxesOfRange(shape, begin, end);
        EXPECT_LE(boxes.size(), 2 * shape.size() - 1);
        // The boxes' elements, in order, are exactly begin..end-1.
        std::vector<int64_t> seen;
        for (const Box &box : boxes) {
          int64_t count = numElements(box.shape);
          for (int64_t i = 0; i < count; ++i) {
            int64_t rest = i, flat = 0;
            std::vector<int64_t> index(shape.size());
            for (size_t d = shape.size(); d-- > 0;) {
              index[d] = rest % box.shape[d] + box.offsets[d];
              rest /= box.shape[d];
            }
            for (size_t d = 0; d < shape.size(); ++d)
              flat = flat * shape[d] + index[d];
            seen.push_back(flat);
          }
        }
        std::vector<int64_t> expected;
        for (int64_t i = begin; i < end; ++i)
          expected.push_back(i);
        ASSERT_EQ(seen, expected)
            << shapeToString(shape) << " [" << begin << ", " << end << ")";
      }
  }
}

TEST_F(CheckpointTest, ASaveOfAStepRemovesTheManifestAnEarlierSaveLeft) {
  Tensor w = randomTensor({7, 9}, DType::F32, 13);
  Tensor b = randomTensor({9}, DType::F32, 14);
  saveColumnSplit(root_, 5, w, b);
  std::string dir = root_ + "/" + checkpointDirName(5);
  ASSERT_TRUE(fs::exists(dir + "/manifest.json"));
  // A new save of step 5 begins (the run resumed from an older one): until
  // it commits, step 5 is not a checkpoint.
  ShardWriter again(root_, 5, 0);
  EXPECT_FALSE(fs::exists(dir + "/manifest.json"));
  std::vector<std::string> warnings;
  EXPECT_FALSE(findLatest(root_, Verify::Manifest, &warnings).has_value());
}
