//===- WalTest.cpp - the write-ahead log between checkpoints
//---------------===//
//
// Records round-trip; a torn tail (a record cut short, or a last record
// that fails its CRC) is found and cut when the log is opened; a bad record
// with good ones after it is corruption, an error naming its offset; the
// parameter hash does not depend on how the bytes are split.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/checkpoint/Wal.h"
#include "rtxrt/core/Tensor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace rtxrt;
namespace fs = std::filesystem;

namespace {

class WalTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern =
        (fs::temp_directory_path() / "rtx-wal-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/wal";
  }
  void TearDown() override { fs::remove_all(dir_); }

  wal::Record record(int64_t step) {
    return {step, 1000 * step, uint64_t(step) * 7, 65536.0f / float(step),
            0x1234567800000000ull + uint64_t(step)};
  }
  void writeSteps(int64_t n) {
    wal::Writer log(path_, 2);
    for (int64_t s = 1; s <= n; ++s)
      log.append(record(s));
    log.sync();
  }
  std::string dir_, path_;
};

constexpr int64_t kRecordBytes = 48;

} // namespace

TEST_F(WalTest, RecordsRoundTrip) {
  writeSteps(5);
  wal::Contents c = wal::read(path_);
  ASSERT_EQ(c.records.size(), 5u);
  for (int64_t s = 1; s <= 5; ++s)
    EXPECT_TRUE(c.records[s - 1] == record(s)) << "step " << s;
  EXPECT_EQ(c.tornBytes, 0);
  EXPECT_EQ(fs::file_size(path_), 5u * kRecordBytes);
  // Reopening continues after the last step, and refuses to go back.
  wal::Writer log(path_, 0);
  EXPECT_THROW(log.append(record(5)), Error);
  log.append(record(6));
  log.sync();
  EXPECT_EQ(wal::read(path_).records.size(), 6u);
}

TEST_F(WalTest, ARecordCutShortIsATornTailAndIsCut) {
  writeSteps(5);
  fs::resize_file(path_, 5 * kRecordBytes - 10);
  wal::Contents c = wal::read(path_);
  EXPECT_EQ(c.records.size(), 4u);
  EXPECT_EQ(c.tornBytes, kRecordBytes - 10);
  {
    wal::Writer log(path_, 1);
    EXPECT_EQ(log.contents().tornBytes, kRecordBytes - 10);
    EXPECT_EQ(fs::file_size(path_), 4u * kRecordBytes);
    log.append(record(5));
  }
  c = wal::read(path_);
  ASSERT_EQ(c.records.size(), 5u);
  EXPECT_TRUE(c.records.back() == record(5));
  EXPECT_EQ(c.tornBytes, 0);
}

TEST_F(WalTest, ALastRecordFailingItsCrcIsATornTail) {
  writeSteps(5);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4 * kRecordBytes + 20);
    f.put('\x7f');
  }
  wal::Contents c = wal::read(path_);
  EXPECT_EQ(c.records.size(), 4u);
  EXPECT_EQ(c.tornBytes, kRecordBytes);
}

TEST_F(WalTest, GarbageIsNotATornTail) {
  writeSteps(2);
  {
    std::ofstream f(path_, std::ios::app | std::ios::binary);
    f << std::string(3 * kRecordBytes, 'x');
  }
  try {
    wal::Writer log(path_, 1);
    FAIL() << "three records' worth of garbage was cut as a torn tail";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  path_ + ": its 144 bytes from byte 96 (after step 2) are "
                          "not records of a log"),
              std::string::npos)
        << e.what();
  }
  // Nothing was cut.
  EXPECT_EQ(fs::file_size(path_), 5u * kRecordBytes);
}

TEST_F(WalTest, ABadRecordWithGoodOnesAfterItIsCorruption) {
  writeSteps(5);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * kRecordBytes + 9);
    f.put('\x01');
  }
  try {
    wal::read(path_);
    FAIL() << "a corrupt record in the middle of the log was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("record at byte 96 (after step 2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(wal::Writer(path_, 1), Error);
}

TEST_F(WalTest, TruncatingKeepsOnlyTheStepsAfterACheckpoint) {
  wal::Writer log(path_, 1);
  for (int64_t s = 1; s <= 6; ++s)
    log.append(record(s));
  log.truncateThrough(4);
  log.append(record(7));
  wal::Contents c = wal::read(path_);
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(c.records[0].step, 5);
  EXPECT_EQ(c.records[2].step, 7);
}

TEST_F(WalTest, TruncateAfterDropsTheStepsAResumeWillRedo) {
  wal::Writer log(path_, 1);
  for (int64_t s = 3; s <= 6; ++s)
    log.append(record(s));
  log.truncateAfter(4);
  log.append(record(5)); // step 5 again, from the resumed run
  wal::Contents c = wal::read(path_);
  ASSERT_EQ(c.records.size(), 3u);
  EXPECT_EQ(c.records[0].step, 3);
  EXPECT_EQ(c.records[2].step, 5);
}

TEST(WalHashTest, TheStateHashDoesNotDependOnTheOrderOrTheRank) {
  std::vector<float> a(100, 1.5f), b(50, -2.0f);
  wal::StateHash one, rank0, rank1;
  one.add("param:w", {0, 0}, a.data(), a.size() * 4);
  one.add("param:w", {10, 0}, b.data(), b.size() * 4);
  rank1.add("param:w", {10, 0}, b.data(), b.size() * 4);
  rank0.add("param:w", {0, 0}, a.data(), a.size() * 4);
  rank0.combine(rank1.value());
  EXPECT_EQ(one.value(), rank0.value());
  // A changed value, a block at another offset or of another tensor: all
  // change the hash.
  wal::StateHash changed, moved, renamed;
  moved.add("param:w", {0, 0}, a.data(), a.size() * 4);
  moved.add("param:w", {0, 10}, b.data(), b.size() * 4);
  renamed.add("param:w", {0, 0}, a.data(), a.size() * 4);
  renamed.add("exp_avg:w", {10, 0}, b.data(), b.size() * 4);
  b[7] = 0.0f;
  changed.add("param:w", {0, 0}, a.data(), a.size() * 4);
  changed.add("param:w", {10, 0}, b.data(), b.size() * 4);
  EXPECT_NE(changed.value(), one.value());
  EXPECT_NE(moved.value(), one.value());
  EXPECT_NE(renamed.value(), one.value());
}
