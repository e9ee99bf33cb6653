//===- Checkpointing.cpp - a program's checkpoints during a run -----------===//

#include "Checkpointing.h"

#include "rtxrt/program/Arguments.h"
#include "rtxrt/offload/OffloadStore.h"
#include "rtxrt/checkpoint/Wal.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::program;
using namespace rtxrt::checkpoint;

namespace {

/// Decides which blocks of the state this rank writes: exactly one copy of
/// every element across all ranks, so that the chunks tile each tensor.
class BlockChooser {
public:
  BlockChooser(const ProgramSpec &spec, int64_t rank)
      : spec_(spec), rank_(rank), coords_(spec.mesh.coordinates(rank)) {
    if (spec.stage >= 0)
      // A pipelined program: the ranks of each coordinate hold their
      // stage's state. A state key that several stages hold (a tied
      // embedding) is written by the first.
      for (size_t c = spec.stages.size(); c-- > 0;)
        for (const ArgSpec &arg : spec.stages[c].args)
          for (const std::string &key : keysOf(arg))
            owner_[key] = static_cast<int64_t>(c);
  }

  /// Whether this rank writes its copy of state `key` with `sharding`
  /// (`flatAxis`: the axis a flat buffer splits it over, else empty).
  /// The ranks that hold the same block (replicas: their coordinates differ
  /// only on axes that do not split it) take turns by key, so that plain
  /// data parallelism spreads the writing over the replicas instead of
  /// leaving it all to one rank.
  bool writes(const std::string &key, const Sharding &sharding,
              const std::string &flatAxis) const {
    if (spec_.stage >= 0) {
      auto it = owner_.find(key);
      if (it == owner_.end() || it->second != spec_.stage)
        return false;
    }
    const auto &names = spec_.mesh.axisNames();
    std::vector<bool> used(names.size());
    for (size_t a = 0; a < names.size(); ++a) {
      const std::string &axis = names[a];
      used[a] = axis == flatAxis || axis == spec_.pipelineAxis ||
                std::count(sharding.partial.begin(), sharding.partial.end(),
                           axis) > 0;
      for (const auto &axes : sharding.dims)
        used[a] = used[a] || std::count(axes.begin(), axes.end(), axis) > 0;
    }
    // A rank's index among the replicas of its block: its coordinates on
    // the axes that do not split the block, as one number.
    auto replicaOf = [&](const std::vector<int64_t> &coords) {
      int64_t replica = 0;
      for (size_t a = 0; a < names.size(); ++a)
        if (!used[a])
          replica = replica * spec_.mesh.axisSizes()[a] + coords[a];
      return replica;
    };
    int64_t replicas = 1;
    for (size_t a = 0; a < names.size(); ++a)
      if (!used[a])
        replicas *= spec_.mesh.axisSizes()[a];
    uint32_t turn = crc32c(key.data(), key.size());
    if (writers_.empty())
      return replicaOf(coords_) == turn % replicas;
    // Only `writers_` write: the turn goes round the replicas among them.
    std::vector<int64_t> holders;
    for (int64_t q : writers_) {
      std::vector<int64_t> theirs = spec_.mesh.coordinates(q);
      bool same = true;
      for (size_t a = 0; a < names.size(); ++a)
        same = same && (!used[a] || theirs[a] == coords_[a]);
      if (same)
        holders.push_back(replicaOf(theirs));
    }
    std::sort(holders.begin(), holders.end());
    return !holders.empty() &&
           holders[turn % holders.size()] == replicaOf(coords_);
  }
  /// Only these ranks write (the survivors of a lost rank that hold the
  /// newest state); by default every rank does.
  void onlyWriters(std::vector<int64_t> ranks) { writers_ = std::move(ranks); }
  LocalBlock block(const ArgSpec &arg) const {
    return localBlock(arg.sharding, arg.shape, spec_.mesh, rank_);
  }
  int64_t rank() const { return rank_; }

private:
  static std::vector<std::string> keysOf(const ArgSpec &arg) {
    std::vector<std::string> keys;
    if (!arg.flat.empty()) {
      for (const ArgSpec &m : arg.members)
        keys.push_back(stateKeyOf(m));
    } else if (std::string key = stateKeyOf(arg); !key.empty()) {
      keys.push_back(key);
    }
    return keys;
  }

  const ProgramSpec &spec_;
  int64_t rank_;
  std::vector<int64_t> coords_;
  std::map<std::string, int64_t> owner_;
  std::vector<int64_t> writers_;
};

std::string placementOf(const ProgramSpec &spec, int64_t rank,
                        const std::string &detail) {
  return "rank=" + std::to_string(rank) + " mesh=" + spec.mesh.spec() +
         (detail.empty() ? "" : " " + detail);
}

/// A block this rank writes, copied out of the state at a step boundary.
struct PendingChunk {
  TensorInfo info;
  std::vector<int64_t> offsets;
  Tensor block;
  std::string placement;
};

/// A block of the state that this rank writes, in host memory: `bytes` of
/// `shape` at `offsets` of the logical tensor `info`.
struct RankBlock {
  const TensorInfo &info;
  const std::vector<int64_t> &offsets;
  const Shape &shape;
  const void *bytes;
  size_t size;
  /// What placementOf adds for a flat buffer's range (else empty).
  const std::string &detail;
};

/// forEachRankBlock for one argument `arg`, whose host value `value()`
/// gives (called at most once, and only `withBytes`).
void forEachBlockOf(const ProgramSpec &spec, const ArgSpec &arg,
                    const std::function<Tensor()> &value,
                    const BlockChooser &choose,
                    const std::function<void(const RankBlock &)> &visit,
                    bool withBytes) {
  if (!arg.flat.empty()) {
    // This rank's shard [lo, hi) of the members' concatenated local
    // blocks: each member's part is a range of its local block.
    Tensor shard = withBytes ? value() : Tensor();
    int64_t length = arg.flat.shard(spec.mesh);
    int64_t coord = spec.mesh.coordinates(
        choose.rank())[spec.mesh.axisIndex(arg.flat.axis)];
    int64_t lo = coord * length, hi = lo + length;
    size_t elem = dtypeSize(arg.dtype);
    std::string detail = "flat=" + arg.name + " over " + arg.flat.axis;
    for (size_t m = 0; m < arg.members.size(); ++m) {
      const ArgSpec &member = arg.members[m];
      std::string key = stateKeyOf(member);
      if (!choose.writes(key, member.sharding, arg.flat.axis))
        continue;
      int64_t start = arg.flat.offsets[m];
      int64_t count = numElements(member.shape);
      int64_t from = std::max(lo, start), to = std::min(hi, start + count);
      if (from >= to)
        continue;
      LocalBlock block = choose.block(member);
      CheckpointPlace place =
          checkpointPlaceOf(member, block.globalShape, block.offsets);
      TensorInfo info{place.key, member.dtype, place.global};
      for (const Box &box :
           boxesOfRange(member.shape, from - start, to - start)) {
        // The box's elements are contiguous in the shard: row-major
        // order within a range of the member.
        int64_t first = 0;
        for (size_t d = 0; d < box.offsets.size(); ++d)
          first = first * member.shape[d] + box.offsets[d];
        std::vector<int64_t> offsets = box.offsets;
        for (size_t d = 0; d < offsets.size(); ++d)
          offsets[d] += place.offsets[d];
        visit({info, offsets, box.shape,
               withBytes ? static_cast<const char *>(shard.raw()) +
                               (start + first - lo) * elem
                         : nullptr,
               static_cast<size_t>(numElements(box.shape)) * elem, detail});
      }
    }
    return;
  }
  std::string key = stateKeyOf(arg);
  if (key.empty() || !choose.writes(key, arg.sharding, ""))
    return;
  LocalBlock block = choose.block(arg);
  CheckpointPlace place =
      checkpointPlaceOf(arg, block.globalShape, block.offsets);
  TensorInfo info{place.key, arg.dtype, place.global};
  static const std::string none;
  if (!withBytes) {
    visit({info, place.offsets, arg.shape, nullptr, 0, none});
    return;
  }
  Tensor host = value();
  visit({info, place.offsets, host.shape(), host.raw(), host.nbytes(), none});
}

/// Calls `visit` with each block of the state in `args` that this rank
/// writes (BlockChooser): a plain sharding's local block, or the boxes of
/// each member range of a ZeRO flat shard. The blocks are views of the host
/// copies: valid during the call only. Without `withBytes`, only where
/// the blocks are (`bytes` null, nothing copied from the device).
/// `offloaded`: false skips the arguments that live in an offload tier.
void forEachRankBlock(const ProgramSpec &spec, const ProgramDevice &device,
                      const std::vector<Tensor> &args,
                      const BlockChooser &choose,
                      const std::function<void(const RankBlock &)> &visit,
                      bool withBytes = true, OffloadStore *offload = nullptr,
                      bool offloaded = true) {
  if (offload && withBytes && offloaded)
    offload->flush(); // the step's writes are the state
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec &arg = spec.args[i];
    if (!arg.offload.empty() && !offloaded)
      continue;
    if (!arg.offload.empty() && withBytes && !offload)
      throw Error("the state " + arg.name + " lives in the " + arg.offload +
                  " offload tier, and this run has no offload store");
    // An offloaded buffer is read from its tier, one at a time.
    forEachBlockOf(
        spec, arg,
        [&] {
          return arg.offload.empty() ? device.toHost(args[i])
                                     : offload->read(stateKeyOf(arg));
        },
        choose, visit, withBytes);
  }
}

/// A block's bytes as a tensor of its own (the block is a view, valid
/// during the visit only).
Tensor copyOf(const RankBlock &b) {
  Tensor copy = Tensor::uninitialized(b.shape, b.info.dtype);
  std::memcpy(copy.raw(), b.bytes, b.size);
  return copy;
}

/// This rank's chunks of the state in `args`, copied (the next steps
/// replace the state while a background thread writes them).
/// (Offloaded arguments are skipped: the writer reads them from their tier.)
std::vector<PendingChunk> collectRankChunks(const ProgramSpec &spec,
                                            const ProgramDevice &device,
                                            const std::vector<Tensor> &args,
                                            const BlockChooser &choose) {
  std::vector<PendingChunk> chunks;
  forEachRankBlock(
      spec, device, args, choose,
      [&](const RankBlock &b) {
        chunks.push_back({b.info, b.offsets, copyOf(b),
                          placementOf(spec, choose.rank(), b.detail)});
      },
      /*withBytes=*/true, /*offload=*/nullptr, /*offloaded=*/false);
  return chunks;
}

} // namespace

uint64_t rtxrt::program::rankStateHash(const ProgramSpec &spec,
                                       const ProgramDevice &device,
                                       const std::vector<Tensor> &args,
                                       int64_t rank, OffloadStore *offload) {
  wal::StateHash hash;
  forEachRankBlock(
      spec, device, args, BlockChooser(spec, rank),
      [&](const RankBlock &b) {
        hash.add(b.info.name, b.offsets, b.bytes, b.size);
      },
      /*withBytes=*/true, offload);
  return hash.value();
}

uint64_t rtxrt::program::rankLayoutHash(const ProgramSpec &spec,
                                        const ProgramDevice &device,
                                        const std::vector<Tensor> &args,
                                        int64_t rank) {
  wal::StateHash hash;
  forEachRankBlock(
      spec, device, args, BlockChooser(spec, rank),
      [&](const RankBlock &b) {
        hash.add(b.info.name, b.offsets, b.shape.data(),
                 b.shape.size() * sizeof(int64_t));
      },
      /*withBytes=*/false);
  return hash.value();
}

int64_t rtxrt::program::writeSurvivorPart(const ProgramSpec &spec,
                                          const ProgramDevice &device,
                                          const std::vector<Tensor> &args,
                                          const std::string &root, int64_t step,
                                          int64_t rank,
                                          const std::vector<int64_t> &writers) {
  auto at = std::find(writers.begin(), writers.end(), rank);
  if (at == writers.end())
    return 0;
  BlockChooser chooser(spec, rank);
  chooser.onlyWriters(writers);
  ShardWriter writer(root, step, at - writers.begin());
  int64_t chunks = 0;
  forEachRankBlock(spec, device, args, chooser, [&](const RankBlock &b) {
    writer.add(b.info, b.offsets, copyOf(b), placementOf(spec, rank, b.detail));
    ++chunks;
  });
  writer.finish();
  return chunks;
}

CheckpointSaver::CheckpointSaver(const ProgramSpec &spec, ProcessGroups &groups,
                                 const ProgramDevice &device,
                                 const CheckpointFlags &flags,
                                 MetadataFn metadata)
    : spec_(spec), groups_(groups), device_(device), flags_(flags),
      metadata_(std::move(metadata)), retention_(flags.dir, flags.keep) {}

CheckpointSaver::~CheckpointSaver() {
  // An error unwinds past finish(): the thread still ends before its
  // state goes (its checkpoint stays uncommitted).
  if (writer_.joinable())
    writer_.join();
  if (offload_)
    offload_->setBeforeStore(nullptr); // the store outlives this saver
}

void CheckpointSaver::start(int64_t stepsDone,
                            const std::vector<Tensor> &args) {
  // One save in flight: the next waits rather than piling up.
  finish();
  std::string root = flags_.dir;
  int64_t rank = groups_.rank();
  // The blocks in device or host memory are copied now; offloaded buffers
  // stay in their tier, which need not fit in memory at once.
  auto chunks = std::make_shared<std::vector<PendingChunk>>(collectRankChunks(
      spec_, device_, args, BlockChooser(spec_, groups_.rank())));
  inFlight_ = stepsDone;
  written_ = false;
  error_.clear();
  if (offload_) {
    // The last step's writes are the state. The writer reads each buffer
    // from the tier while the next steps run; a step's store() of a buffer
    // not read yet waits until it is (the writer takes that one next), so
    // the save holds one buffer at a time and the tier is never copied
    // whole.
    offload_->flush();
    std::lock_guard<std::mutex> lock(unsaved_.mutex);
    unsaved_.keys.clear();
    for (const ArgSpec &arg : spec_.args)
      if (!arg.offload.empty())
        unsaved_.keys.push_back(stateKeyOf(arg));
    unsaved_.wanted.clear();
    offload_->setBeforeStore(
        [this](const std::string &key) { waitUntilSaved(key); });
  }
  writer_ = std::thread([this, chunks, root, stepsDone, rank] {
    try {
      ShardWriter writer(root, stepsDone, rank);
      for (const PendingChunk &c : *chunks)
        writer.add(c.info, c.offsets, c.block, c.placement);
      if (offload_)
        writeOffloaded(writer, rank);
      writer.finish();
    } catch (const std::exception &e) {
      error_ = e.what();
    }
    if (offload_) {
      // A failed save releases the steps that wait for it.
      std::lock_guard<std::mutex> lock(unsaved_.mutex);
      unsaved_.keys.clear();
      unsaved_.changed.notify_all();
    }
    written_ = true; // after error_: the main thread reads it once true
  });
}

void CheckpointSaver::writeOffloaded(ShardWriter &writer, int64_t rank) {
  BlockChooser chooser(spec_, rank);
  while (true) {
    std::string key;
    {
      // The buffer a step waits for first, else the next in order.
      std::lock_guard<std::mutex> lock(unsaved_.mutex);
      if (unsaved_.keys.empty())
        return;
      auto next = std::find(unsaved_.keys.begin(), unsaved_.keys.end(),
                            unsaved_.wanted);
      key = next != unsaved_.keys.end() ? *next : unsaved_.keys.front();
    }
    // Once read, the step may replace it: the write goes on from memory.
    Tensor value = offload_->read(key);
    {
      std::lock_guard<std::mutex> lock(unsaved_.mutex);
      unsaved_.keys.erase(
          std::find(unsaved_.keys.begin(), unsaved_.keys.end(), key));
      unsaved_.changed.notify_all();
    }
    for (const ArgSpec &arg : spec_.args)
      if (!arg.offload.empty() && stateKeyOf(arg) == key)
        forEachBlockOf(
            spec_, arg, [&] { return value; }, chooser,
            [&](const RankBlock &b) {
              writer.add(b.info, b.offsets, copyOf(b),
                         placementOf(spec_, rank, b.detail));
            },
            /*withBytes=*/true);
  }
}

void CheckpointSaver::waitUntilSaved(const std::string &key) {
  std::unique_lock<std::mutex> lock(unsaved_.mutex);
  auto unsaved = [&] {
    return std::find(unsaved_.keys.begin(), unsaved_.keys.end(), key) !=
           unsaved_.keys.end();
  };
  if (!unsaved())
    return;
  unsaved_.wanted = key;
  unsaved_.changed.wait(lock, [&] { return !unsaved(); });
}

bool CheckpointSaver::atStepBoundary(bool stopRequested) {
  // One tiny exchange per step: whether any rank was asked to stop (a
  // signal that reached some ranks during this step stops all of them
  // after it), and whether every rank has written its part of the save in
  // flight, which is then committed at this same boundary on every rank.
  int64_t mine = (stopRequested ? 1 : 0) | (inFlight_ >= 0 && written_ ? 2 : 0);
  std::vector<int64_t> all = groups_.exchangeFlags(mine, "the checkpoint");
  bool stop = false, allWritten = inFlight_ >= 0;
  for (int64_t flags : all) {
    stop = stop || (flags & 1);
    allWritten = allWritten && (flags & 2);
  }
  if (allWritten)
    finish();
  return stop;
}

void CheckpointSaver::finish() {
  if (inFlight_ < 0)
    return;
  if (writer_.joinable())
    writer_.join();
  int64_t step = inFlight_;
  inFlight_ = -1;
  std::string error = error_;
  // Every rank learns whether all wrote their part: none hangs waiting for
  // a commit that will not come.
  int64_t failed = groups_.firstFailedRank(error.empty(), "the checkpoint");
  if (failed >= 0)
    throw Error("checkpoint of step " + std::to_string(step) +
                " not committed: rank " + std::to_string(failed) +
                " could not write its part" +
                (error.empty() ? std::string() : ": " + error));
  if (groups_.rank() == 0) {
    try {
      commitCheckpoint(flags_.dir, step, spec_.mesh.numRanks(),
                       metadata_(step));
      retention_.committedHere(step);
      std::vector<std::string> warnings;
      retention_.apply(&warnings);
      for (const std::string &w : warnings)
        std::fprintf(stderr, "warning: --keep-checkpoints: %s\n", w.c_str());
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  if (groups_.firstFailedRank(error.empty(), "the checkpoint's commit") >= 0)
    throw Error("checkpoint of step " + std::to_string(step) +
                " not committed" + (error.empty() ? "" : ": " + error));
  committed_ = step;
  if (onCommitted_)
    onCommitted_(step);
}

/// With no whole checkpoint left under `dir`: an error when some were
/// committed (each skipped above as corrupt), so that a job does not quietly
/// train from step 0 over them; a first start (none committed, or only
/// saves that stopped half-way) goes on.
static void refuseToLoseCheckpoints(const std::string &dir) {
  std::vector<CheckpointRef> committed = findManifested(dir);
  if (committed.empty())
    return;
  std::string names;
  for (const CheckpointRef &c : committed)
    names += (names.empty() ? "" : ", ") + c.dir;
  throw Error("--resume: every committed checkpoint in " + dir +
              " is corrupt (" + names +
              "; the warnings above say why): nothing to resume from. Run "
              "without --resume to start afresh (the corrupt checkpoints "
              "stay until retention removes them)");
}

std::shared_ptr<const CheckpointReader>
rtxrt::program::openResumeCheckpoint(const CheckpointFlags &flags, int64_t rank,
                                     const std::vector<std::string> &corrupt) {
  if (!flags.resume)
    return nullptr;
  // The manifest and the files' sizes only: each rank checks the CRC32C of
  // the chunks it reads (CorruptChunk), and the ranks agree on the outcome
  // (agreeOnResume), instead of every rank reading the whole checkpoint.
  std::vector<std::string> warnings;
  auto latest = findLatest(flags.dir, Verify::Manifest, &warnings, corrupt);
  if (rank == 0) {
    for (const std::string &w : warnings)
      std::fprintf(stderr, "warning: --resume: %s\n", w.c_str());
    if (latest)
      std::printf("resume: from %s (step %lld)\n", latest->dir.c_str(),
                  static_cast<long long>(latest->step));
    else if (findManifested(flags.dir).empty())
      std::printf("resume: no committed checkpoint in %s: starting afresh\n",
                  flags.dir.c_str());
    // Before the reads: a recovery that fails half-way still says where
    // it resumed from.
    std::fflush(stdout);
  }
  if (!latest) {
    refuseToLoseCheckpoints(flags.dir);
    return nullptr;
  }
  return std::make_shared<const CheckpointReader>(latest->dir);
}

namespace {
volatile sig_atomic_t preemptionSignal = 0;
extern "C" void onPreemption(int signal) { preemptionSignal = signal; }
} // namespace

void rtxrt::program::installPreemptionHandler() {
  struct sigaction action {};
  action.sa_handler = onPreemption;
  // Interrupted system calls (a collective's socket wait) resume.
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

bool rtxrt::program::preemptionRequested() { return preemptionSignal != 0; }

int64_t rtxrt::program::stepsDoneOf(const CheckpointReader &checkpoint) {
  return checkpoint.manifest().step;
}
