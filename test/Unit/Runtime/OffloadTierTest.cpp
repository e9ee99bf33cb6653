//===- OffloadTierTest.cpp - each offload tier on its own -----------------===//
//
// The offload store's tiers (runtime/lib/offload/) without the store: a tier
// moves a transfer's bytes both ways bit for bit, now on the caller's thread
// or later on its own thread (ending it with Done, on that thread), says
// where a value is, and owns its places. The file tier names its files by
// the key, refuses two keys that would share one, reports what a transfer
// cannot start with instead of a Done, and removes its files and folder.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "offload/FileTier.h"
#include "offload/HostTier.h"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::offload;
using namespace rtxrt::test;

namespace {

/// The Dones of a tier: which transfers ended, with what, on which thread.
class Dones {
public:
  Tier::Done sink() {
    return [this](Transfer *t, int error) {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_.push_back({t, error, std::this_thread::get_id()});
      changed_.notify_all();
    };
  }
  struct Ended {
    Transfer *transfer;
    int error;
    std::thread::id thread;
  };
  /// The n-th Done, waiting for it.
  Ended wait(size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return ended_.size() > n; });
    return ended_[n];
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ended_.size();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Ended> ended_;
};

/// What the store does before a transfer: the whole value of e, through
/// the tier's staging if it has one.
std::unique_ptr<Transfer> transferOf(Tier &tier, const std::string &key,
                                     Entry &e, bool write, Tensor tensor) {
  auto t = std::make_unique<Transfer>();
  t->key = key;
  t->entry = &e;
  t->write = write;
  t->tensor = tensor;
  t->data = static_cast<unsigned char *>(tensor.raw());
  t->size = e.bytes;
  tier.stage(*t);
  return t;
}

void placeFor(Tier &tier, const std::string &key, Entry &e,
              const Tensor &value) {
  e.shape = value.shape();
  e.dtype = value.dtype();
  e.bytes = value.nbytes();
  tier.place(key, e);
}

/// put() then read() on the caller's thread, then a write and a read on the
/// tier's thread: each moves the value bit for bit.
void expectMovesBothWays(Tier &tier, Dones &dones) {
  Tensor value = randomTensor({37, 29}, DType::F32, 11); // 4292 bytes
  Entry e;
  placeFor(tier, "adam.m", e, value);
  ASSERT_TRUE(e.place);
  auto put = transferOf(tier, "adam.m", e, /*write=*/true, value);
  ASSERT_EQ(tier.moveNow(*put), 0);
  EXPECT_EQ(put->done, put->size);
  Tensor back = Tensor::uninitialized(e.shape, e.dtype);
  auto read = transferOf(tier, "adam.m", e, /*write=*/false, back);
  ASSERT_EQ(tier.moveNow(*read), 0);
  EXPECT_TRUE(sameBits(back, value));

  Tensor next = randomTensor({37, 29}, DType::F32, 12);
  auto write = transferOf(tier, "adam.m", e, /*write=*/true, next);
  ASSERT_EQ(tier.start(*write), 0);
  Dones::Ended ended = dones.wait(0);
  EXPECT_EQ(ended.transfer, write.get());
  EXPECT_EQ(ended.error, 0);
  EXPECT_NE(ended.thread, std::this_thread::get_id());
  Tensor fetched = Tensor::uninitialized(e.shape, e.dtype);
  auto fetch = transferOf(tier, "adam.m", e, /*write=*/false, fetched);
  ASSERT_EQ(tier.start(*fetch), 0);
  ended = dones.wait(1);
  EXPECT_EQ(ended.transfer, fetch.get());
  EXPECT_EQ(ended.error, 0);
  // The tier is done with it: the bytes are in the tensor (not staging).
  EXPECT_EQ(fetch->fd, -1);
  EXPECT_TRUE(sameBits(fetched, next));
}

TEST(HostTierTest, MovesBitsBothWaysOnItsThread) {
  Dones dones;
  HostTier tier(dones.sink());
  expectMovesBothWays(tier, dones);
  Entry e;
  placeFor(tier, "k", e, randomTensor({3}, DType::F32, 1));
  EXPECT_EQ(tier.where(e), "host memory");
  OffloadStats stats;
  tier.describe(stats);
  EXPECT_FALSE(stats.direct);
  EXPECT_FALSE(stats.uring);
}

// A key put again with another size gets memory of the new size (the
// copy would overrun the old one).
TEST(HostTierTest, PlacedAgainWithANewSize) {
  Dones dones;
  HostTier tier(dones.sink());
  Entry e;
  placeFor(tier, "k", e, randomTensor({4}, DType::F32, 1));
  Tensor bigger = randomTensor({5000}, DType::F32, 2);
  placeFor(tier, "k", e, bigger);
  auto put = transferOf(tier, "k", e, /*write=*/true, bigger);
  ASSERT_EQ(tier.moveNow(*put), 0);
  Tensor back = Tensor::uninitialized(e.shape, e.dtype);
  auto read = transferOf(tier, "k", e, /*write=*/false, back);
  ASSERT_EQ(tier.moveNow(*read), 0);
  EXPECT_TRUE(sameBits(back, bigger));
}

OffloadOptions filesIn(const std::string &dir, bool uring) {
  OffloadOptions o;
  o.tier = OffloadTier::Files;
  o.directory = dir;
  o.tryUring = uring;
  return o;
}

/// A fresh folder name under /tmp (not created: the tier makes it).
std::string freshFolder() {
  std::string pattern = "/tmp/rtx-offload-tier-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    return "";
  ::rmdir(pattern.c_str());
  return pattern + "/nested";
}

TEST(FileTierTest, MovesBitsBothWaysWithEitherThread) {
  for (bool uring : {true, false}) {
    SCOPED_TRACE(uring ? "io_uring" : "pread/pwrite");
    std::string dir = freshFolder();
    ASSERT_FALSE(dir.empty());
    {
      Dones dones;
      FileTier tier(filesIn(dir, uring), dones.sink());
      EXPECT_TRUE(std::filesystem::is_directory(dir));
      expectMovesBothWays(tier, dones);
      EXPECT_TRUE(std::filesystem::exists(dir + "/adam.m.buf"));
      OffloadStats stats;
      tier.describe(stats);
      if (!uring)
        EXPECT_FALSE(stats.uring);
      // With O_DIRECT the bytes went through whole blocks.
      Entry e;
      placeFor(tier, "x", e, randomTensor({1001}, DType::BF16, 3));
      auto t = transferOf(tier, "x", e, /*write=*/true,
                          randomTensor({1001}, DType::BF16, 3));
      EXPECT_EQ(t->size, stats.direct ? 4096u : 2002u);
      EXPECT_EQ(bool(t->staging), stats.direct);
    }
    // Working storage: its files and the folder it made are gone.
    EXPECT_FALSE(std::filesystem::exists(dir));
    std::filesystem::remove(std::filesystem::path(dir).parent_path());
  }
}

TEST(FileTierTest, FilesAreNamedByTheKey) {
  std::string dir = freshFolder();
  ASSERT_FALSE(dir.empty());
  Dones dones;
  FileTier tier(filesIn(dir, false), dones.sink());
  Entry plain, slash, underscore, hidden;
  Tensor value = randomTensor({2}, DType::F32, 1);
  placeFor(tier, "adam.v-0_1", plain, value);
  EXPECT_EQ(tier.where(plain), dir + "/adam.v-0_1.buf");
  // Keys that are not safe file names are sanitised and hashed, so "a/b"
  // and "a_b" get different files; so does a key starting with '.'.
  placeFor(tier, "a/b", slash, value);
  placeFor(tier, "a_b", underscore, value);
  placeFor(tier, ".h", hidden, value);
  EXPECT_EQ(tier.where(underscore), dir + "/a_b.buf");
  EXPECT_EQ(tier.where(slash).rfind(dir + "/a_b-", 0), 0u) << tier.where(slash);
  EXPECT_EQ(tier.where(hidden).rfind(dir + "/.h-", 0), 0u)
      << tier.where(hidden);
  // A key placed again keeps its file.
  std::string before = tier.where(plain);
  placeFor(tier, "adam.v-0_1", plain, randomTensor({9}, DType::F32, 2));
  EXPECT_EQ(tier.where(plain), before);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(FileTierTest, TwoKeysThatWouldShareAFileAreAnError) {
  std::string dir = freshFolder();
  ASSERT_FALSE(dir.empty());
  Dones dones;
  FileTier tier(filesIn(dir, false), dones.sink());
  Tensor value = randomTensor({2}, DType::F32, 1);
  // "a/b" is sanitised and hashed ("a_b-HASH.buf"); the plain key
  // "a_b-HASH" would get that file too.
  Entry first, second;
  placeFor(tier, "a/b", first, value);
  std::string name = std::filesystem::path(tier.where(first)).filename();
  std::string clash = name.substr(0, name.size() - 4); // without ".buf"
  expectError(
      [&] { placeFor(tier, clash, second, value); },
      {"keys 'a/b' and '" + clash + "'", "would share the file " + name});
  EXPECT_FALSE(second.place);
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

// What keeps a transfer from starting comes back from start(), with no
// Done; a file shorter than its value ends a read with kShortFile.
TEST(FileTierTest, FailuresAreReportedNotDone) {
  for (bool uring : {true, false}) {
    SCOPED_TRACE(uring ? "io_uring" : "pread/pwrite");
    std::string dir = freshFolder();
    ASSERT_FALSE(dir.empty());
    {
      Dones dones;
      FileTier tier(filesIn(dir, uring), dones.sink());
      Tensor value = randomTensor({3000}, DType::F32, 5);
      Entry e;
      placeFor(tier, "never-written", e, value);
      Tensor into = Tensor::uninitialized(e.shape, e.dtype);
      auto read = transferOf(tier, "never-written", e, false, into);
      EXPECT_EQ(tier.start(*read), ENOENT);
      EXPECT_EQ(read->fd, -1);
      EXPECT_EQ(dones.count(), 0u);

      // One block of the value's three (a whole block: O_DIRECT reads
      // continue at aligned offsets only).
      int fd = ::open(tier.where(e).c_str(), O_WRONLY | O_CREAT, 0644);
      ASSERT_GE(fd, 0);
      std::vector<char> block(4096, 'x');
      ASSERT_EQ(::write(fd, block.data(), block.size()), 4096);
      ::close(fd);
      auto shortRead = transferOf(tier, "never-written", e, false, into);
      ASSERT_EQ(tier.start(*shortRead), 0);
      EXPECT_EQ(dones.wait(0).error, kShortFile);
      auto now = transferOf(tier, "never-written", e, false, into);
      EXPECT_EQ(tier.moveNow(*now), kShortFile);
    }
    std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
  }
}

TEST(FileTierTest, NeedsAUsableDirectory) {
  Dones dones;
  expectError([&] { FileTier tier(filesIn("", false), dones.sink()); },
              {"needs a directory"});
  expectError(
      [&] { FileTier tier(filesIn("/proc/version/x", false), dones.sink()); },
      {"cannot create /proc/version/x"});
}

} // namespace
