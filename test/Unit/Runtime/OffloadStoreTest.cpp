//===- OffloadStoreTest.cpp - the offload store of ZeRO-Offload -----------===//
//
// Both tiers, both file engines (io_uring and the pread/pwrite thread) and
// both file modes (O_DIRECT and buffered) move values bit for bit; the slot
// bound is an error rather than a hang; a slow disk slows the loop but does
// not grow memory; a full disk is an error naming the key.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/core/AllocatorStats.h"
#include "rtxrt/offload/OffloadStore.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fcntl.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// A fresh directory under `parent`, removed with everything in it.
class TempDir {
public:
  explicit TempDir(const std::string &parent) {
    std::string pattern = parent + "/rtx-offload-test-XXXXXX";
    if (::mkdtemp(pattern.data()))
      path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty())
      std::filesystem::remove_all(path_);
  }
  bool ok() const { return !path_.empty(); }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Whether `dir`'s file system takes O_DIRECT, found without the store.
bool takesODirect(const std::string &dir) {
  std::string path = dir + "/odirect-check";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
  bool ok = false;
  if (fd >= 0) {
    void *block = nullptr;
    if (::posix_memalign(&block, 4096, 4096) == 0) {
      std::memset(block, 1, 4096);
      ok = ::pwrite(fd, block, 4096, 0) == 4096;
      std::free(block);
    }
    ::close(fd);
  }
  ::unlink(path.c_str());
  return ok;
}

struct Logged {
  std::vector<std::string> lines;
  std::function<void(const std::string &)> sink() {
    return [this](const std::string &line) { lines.push_back(line); };
  }
  bool has(const std::string &text) const {
    for (const std::string &line : lines)
      if (line.find(text) != std::string::npos)
        return true;
    return false;
  }
  std::string all() const {
    std::string s;
    for (const std::string &line : lines)
      s += line + "\n";
    return s;
  }
};

OffloadOptions filesOptions(const std::string &dir, bool uring, Logged &log) {
  OffloadOptions o;
  o.tier = OffloadTier::Files;
  o.directory = dir;
  o.tryUring = uring;
  o.log = log.sink();
  return o;
}

/// f32 of 4292 bytes and bf16 of 2002 bytes: neither a multiple of 4096.
std::vector<std::pair<std::string, Tensor>> sampleValues(unsigned seed) {
  return {{"adam.m/block0", randomTensor({37, 29}, DType::F32, seed)},
          {"v", randomTensor({1001}, DType::BF16, seed + 1)}};
}

/// put, fetch, store a new value, flush, read, fetch again: every value
/// comes back bit for bit.
void expectRoundTrip(OffloadStore &store) {
  auto values = sampleValues(7);
  for (auto &[key, value] : values)
    store.put(key, value);
  for (auto &[key, value] : values) {
    Tensor fetched = store.fetch(key).get();
    EXPECT_TRUE(sameBits(fetched, value)) << key;
    // An optimizer update, in place (as a step does).
    for (int64_t i = 0; i < fetched.numel(); ++i)
      fetched.setFromDouble(i, fetched.getAsDouble(i) * 0.5 + 1);
    store.store(key, fetched);
    value = fetched.clone();
  }
  store.flush();
  for (auto &[key, value] : values) {
    EXPECT_TRUE(sameBits(store.read(key), value)) << key;
    Tensor again = store.fetch(key).get();
    EXPECT_TRUE(sameBits(again, value)) << key;
    store.store(key, again);
  }
  store.flush();
  OffloadStats s = store.stats();
  // 2 puts + 4 stores; 4 fetches + 2 reads.
  EXPECT_EQ(s.writes, 6);
  EXPECT_EQ(s.reads, 6);
  EXPECT_EQ(s.inFlightBytes, 0);
  EXPECT_GE(s.heldBytes, 4292 + 2002);
}

TEST(OffloadStoreTest, HostRoundTrip) {
  auto store = OffloadStore::create(OffloadOptions());
  expectRoundTrip(*store);
  OffloadStats s = store->stats();
  EXPECT_EQ(s.heldBytes, 4292 + 2002);
  EXPECT_EQ(s.bytesRead, 2 * (4292 + 2002) + 4292 + 2002);
  EXPECT_FALSE(s.direct);
  EXPECT_FALSE(s.uring);
}

// tmpfs refused O_DIRECT until Linux 6.6 ("tmpfs: trivial support for
// direct IO"); newer kernels take it. Either way the log and the stats
// must say what the store does, and values must round-trip.
TEST(OffloadStoreTest, FilesRoundTripOnShm) {
  TempDir dir("/dev/shm");
  if (!dir.ok())
    GTEST_SKIP() << "no /dev/shm";
  bool direct = takesODirect(dir.path());
  for (bool uring : {true, false}) {
    SCOPED_TRACE(uring ? "io_uring" : "pread/pwrite");
    Logged log;
    auto store = OffloadStore::create(filesOptions(dir.path(), uring, log));
    expectRoundTrip(*store);
    OffloadStats s = store->stats();
    EXPECT_EQ(s.direct, direct);
    EXPECT_EQ(log.has("does not support O_DIRECT; using buffered reads and "
                      "writes"),
              !direct)
        << log.all();
    EXPECT_EQ(log.has(": O_DIRECT reads and writes"), direct) << log.all();
    EXPECT_EQ(s.heldBytes,
              direct ? 8192 + 4096 : 4292 + 2002); // files padded to blocks
    if (!uring)
      EXPECT_FALSE(s.uring);
  }
}

TEST(OffloadStoreTest, FilesRoundTripOnDisk) {
  int tested = 0;
  for (const char *parent : {"/var/tmp", "/tmp"}) {
    TempDir dir(parent);
    if (!dir.ok())
      continue;
    ++tested;
    for (bool uring : {true, false}) {
      SCOPED_TRACE(std::string(parent) + (uring ? " io_uring" : " pread"));
      Logged log;
      auto store = OffloadStore::create(filesOptions(dir.path(), uring, log));
      expectRoundTrip(*store);
      OffloadStats s = store->stats();
      EXPECT_EQ(s.direct, takesODirect(dir.path()));
      // The log says which, whatever this machine supports.
      EXPECT_TRUE(s.direct ? log.has(": O_DIRECT reads and writes")
                           : log.has("does not support O_DIRECT"))
          << log.all();
      EXPECT_TRUE(s.uring ? log.has("io_uring for reads and writes")
                          : log.has("pread/pwrite on a worker thread"))
          << log.all();
      std::cout << "[   info   ] " << log.all();
    }
    // The store removes its files (working storage) when destroyed.
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  }
  if (tested == 0)
    GTEST_SKIP() << "neither /var/tmp nor /tmp is writable";
}

// No file system here may refuse O_DIRECT, so the store's probe file is made
// a symlink to /dev/zero: a character device refuses O_DIRECT with EINVAL,
// as such a file system does.
TEST(OffloadStoreTest, FilesFallBackWhenODirectIsRefused) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  std::string probe = dir.path() + "/rtx-offload-probe.tmp";
  ASSERT_EQ(::symlink("/dev/zero", probe.c_str()), 0);
  Logged log;
  auto store = OffloadStore::create(filesOptions(dir.path(), true, log));
  EXPECT_TRUE(log.has(dir.path() + " does not support O_DIRECT; using "
                                   "buffered reads and writes"))
      << log.all();
  EXPECT_FALSE(store->stats().direct);
  expectRoundTrip(*store);
  EXPECT_EQ(store->stats().heldBytes, 4292 + 2002); // not padded
}

TEST(OffloadStoreTest, MoreThanKFetchesIsAnErrorNotAHang) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  for (int tier = 0; tier < 2; ++tier) {
    Logged log;
    OffloadOptions o =
        tier ? filesOptions(dir.path(), true, log) : OffloadOptions();
    o.maxInFlight = 2;
    o.stallSeconds = 0.2;
    auto store = OffloadStore::create(o);
    for (const char *key : {"a", "b", "c"})
      store->put(key, randomTensor({100}, DType::F32, 1));
    auto a = store->fetch("a");
    auto b = store->fetch("b");
    Tensor expected = a.get().clone();
    // Both slots hold fetched tensors that only this thread can release.
    expectError([&] { store->fetch("c"); },
                {"'c'", "K=2", "fetched tensors still held"});
    // A write needs a slot too.
    expectError([&] { store->store("c", expected); }, {"'c'", "K=2"});
    // Releasing a fetched tensor frees its slot: c can be fetched now.
    a = std::shared_future<Tensor>();
    EXPECT_TRUE(sameBits(store->fetch("c").get(), expected));
  }
}

TEST(OffloadStoreTest, BadKeysAndValuesAreErrorsNamingTheKey) {
  auto store = OffloadStore::create(OffloadOptions());
  store->put("w", randomTensor({8}, DType::F32, 2));
  expectError([&] { store->fetch("nope"); }, {"unknown key 'nope'"});
  expectError([&] { store->read("nope"); }, {"unknown key 'nope'"});
  expectError([&] { store->store("w", Tensor({9}, DType::F32)); },
              {"'w'", "f32 [9]", "f32 [8]"});
  expectError([&] { store->store("w", Tensor({8}, DType::BF16)); },
              {"'w'", "bf16 [8]"});
  // A key may be read again before it is stored (a ZeRO-3 shard is read
  // for the forward pass, the backward pass and its update).
  auto w = store->fetch("w");
  auto again = store->fetch("w");
  EXPECT_TRUE(sameBits(w.get(), again.get()));
  again = std::shared_future<Tensor>(); // frees its slot for the write
  store->store("w", w.get());
  expectError(
      [] {
        OffloadOptions o;
        o.maxInFlight = 0;
        OffloadStore::create(o);
      },
      {"maxInFlight"});
  expectError(
      [] {
        OffloadOptions o;
        o.tier = OffloadTier::Files;
        OffloadStore::create(o);
      },
      {"directory"});
}

/// K=2 and a disk of 50 ms per transfer: 6 fetch+store pairs over 3 keys
/// hold at most 2 buffers (and their staging) and take at least the 12
/// transfers' 600 ms, as the slow disk serves one at a time.
void expectBackpressure(OffloadOptions o) {
  o.maxInFlight = 2;
  o.throttleMs = 50;
  auto store = OffloadStore::create(o);
  const std::vector<std::string> keys = {"k0", "k1", "k2"};
  for (size_t i = 0; i < keys.size(); ++i)
    store->put(keys[i], randomTensor({3000}, DType::F32, unsigned(i)));
  const int64_t bytes = 12000, staging = store->stats().direct ? 12288 : 0;
  auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) {
    const std::string &key = keys[i % 3];
    Tensor value = store->fetch(key).get();
    value.data<float>()[0] += 1;
    store->store(key, value);
  }
  store->flush();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  OffloadStats s = store->stats();
  EXPECT_LE(s.peakInFlightBytes, 2 * (bytes + staging));
  // Two buffers were in flight at once: a write overlapped the next fetch.
  EXPECT_GE(s.peakInFlightBytes, 2 * bytes);
  EXPECT_GE(seconds, 12 * 0.050);
  EXPECT_GT(s.blockedSeconds, 0.25); // waits for data and for slots
  EXPECT_EQ(s.inFlightBytes, 0);
  for (size_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(store->read(keys[i]).data<float>()[0],
              randomTensor({3000}, DType::F32, unsigned(i)).data<float>()[0] +
                  2);
}

TEST(OffloadStoreTest, SlowDiskBoundsMemoryAndWaitsHost) {
  expectBackpressure(OffloadOptions());
}

TEST(OffloadStoreTest, SlowDiskBoundsMemoryAndWaitsFiles) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  for (bool uring : {true, false}) {
    SCOPED_TRACE(uring ? "io_uring" : "pread/pwrite");
    Logged log;
    expectBackpressure(filesOptions(dir.path(), uring, log));
  }
}

// The host tier stands for memory outside the device: rtxrt's allocator
// (step peak memory) must not count it, but must count fetched buffers.
TEST(OffloadStoreTest, HostTierIsNotCountedByTheAllocator) {
  Tensor value = randomTensor({1 << 18}, DType::F32, 3); // 1 MiB
  auto store = OffloadStore::create(OffloadOptions());
  int64_t before = hostAllocatorStats().inUseBytes;
  store->put("m", value);
  store->put("v", value);
  EXPECT_EQ(hostAllocatorStats().inUseBytes, before);
  EXPECT_EQ(store->stats().heldBytes, 2 * int64_t(value.nbytes()));
  {
    Tensor fetched = store->fetch("m").get();
    EXPECT_GE(hostAllocatorStats().inUseBytes,
              before + int64_t(value.nbytes()));
    store->store("m", fetched);
  }
  store->flush();
  EXPECT_EQ(hostAllocatorStats().inUseBytes, before);
}

// A full disk: the key's file is a symlink to /dev/full, whose writes fail
// with ENOSPC (and which refuses O_DIRECT, so this also covers a file that
// refuses it in a directory that takes it).
TEST(OffloadStoreTest, FullDiskIsAnErrorNamingTheKey) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  for (bool uring : {true, false}) {
    SCOPED_TRACE(uring ? "io_uring" : "pread/pwrite");
    Logged log;
    auto store = OffloadStore::create(filesOptions(dir.path(), uring, log));
    Tensor kept = randomTensor({5000}, DType::F32, 4);
    store->put("kept", kept);
    store->put("full", randomTensor({5000}, DType::F32, 5));
    std::string file = dir.path() + "/full.buf";
    ASSERT_EQ(::unlink(file.c_str()), 0);
    ASSERT_EQ(::symlink("/dev/full", file.c_str()), 0);
    Tensor value = store->fetch("full").get(); // /dev/full reads zeros
    store->store("full", value);
    expectError(
        [&] { store->flush(); },
        {"writing 'full' (20000 bytes) to " + file, "No space left on device"});
    // The failure stays: every later fetch, store and flush throws it.
    expectError([&] { store->fetch("kept"); }, {"'full'", "No space left"});
    expectError([&] { store->store("kept", kept); }, {"No space left"});
    expectError([&] { store->flush(); }, {"No space left"});
    // The tier holds no complete value of the key whose write failed (a
    // partial write may have overwritten the old one); others stay readable.
    expectError([&] { store->read("full"); },
                {"no complete value of 'full'", "No space left"});
    EXPECT_TRUE(sameBits(store->read("kept"), kept));
    if (store->stats().direct)
      EXPECT_TRUE(log.has("full.buf refuses O_DIRECT")) << log.all();
  }
}

// A fetch right after a store (its write still on the slow disk) reads the
// new value, not the one before it; so does read().
TEST(OffloadStoreTest, FetchSeesTheWriteInProgress) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  for (int engine = 0; engine < 3; ++engine) {
    Logged log;
    OffloadOptions o = engine == 0 ? OffloadOptions()
                                   : filesOptions(dir.path(), engine == 1, log);
    o.throttleMs = 30;
    auto store = OffloadStore::create(o);
    store->put("a", randomTensor({3000}, DType::F32, 8));
    Tensor next = randomTensor({3000}, DType::F32, 9);
    store->store("a", next);
    std::shared_future<Tensor> fetched = store->fetch("a");
    // fetch() itself waited for the write (30 ms on this disk).
    EXPECT_GE(store->stats().blockedSeconds, 0.025) << engine;
    EXPECT_TRUE(sameBits(fetched.get(), next)) << engine;
    Tensor last = randomTensor({3000}, DType::F32, 10);
    store->store("a", last);
    EXPECT_TRUE(sameBits(store->read("a"), last)) << engine;
  }
}

// The destructor waits for transfers in flight (and does not throw).
TEST(OffloadStoreTest, DestroyedWithTransfersInFlight) {
  TempDir dir("/tmp");
  ASSERT_TRUE(dir.ok());
  Logged log;
  OffloadOptions o = filesOptions(dir.path(), true, log);
  o.throttleMs = 20;
  std::shared_future<Tensor> pending;
  {
    auto store = OffloadStore::create(o);
    store->put("a", randomTensor({100}, DType::F32, 6));
    store->put("b", randomTensor({100}, DType::F32, 7));
    store->store("a", store->fetch("a").get());
    pending = store->fetch("b");
  }
  // The read finished before the store went away.
  EXPECT_TRUE(sameBits(pending.get(), randomTensor({100}, DType::F32, 7)));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

} // namespace
