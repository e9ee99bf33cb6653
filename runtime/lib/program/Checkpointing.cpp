//===- Checkpointing.cpp - a program's checkpoints during a run -----------===//

#include "Checkpointing.h"

#include "rtxrt/Arguments.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>

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
    int64_t replica = 0, replicas = 1;
    const auto &names = spec_.mesh.axisNames();
    for (size_t a = 0; a < names.size(); ++a) {
      const std::string &axis = names[a];
      bool used = axis == flatAxis || axis == spec_.pipelineAxis ||
                  std::count(sharding.partial.begin(), sharding.partial.end(),
                             axis) > 0;
      for (const auto &axes : sharding.dims)
        used = used || std::count(axes.begin(), axes.end(), axis) > 0;
      if (used)
        continue;
      replica = replica * spec_.mesh.axisSizes()[a] + coords_[a];
      replicas *= spec_.mesh.axisSizes()[a];
    }
    return replica == crc32c(key.data(), key.size()) % replicas;
  }
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
};

std::string placementOf(const ProgramSpec &spec, int64_t rank,
                        const std::string &detail) {
  return "rank=" + std::to_string(rank) + " mesh=" + spec.mesh.spec() +
         (detail.empty() ? "" : " " + detail);
}

/// This rank's chunks of the state in `args`.
void writeRankChunks(const ProgramSpec &spec, const ProgramDevice &device,
                     const std::vector<Tensor> &args,
                     const BlockChooser &choose, ShardWriter &writer) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec &arg = spec.args[i];
    if (!arg.offload.empty())
      throw Error("--checkpoint does not yet save offloaded state (" +
                  arg.name + " lives in the " + arg.offload +
                  " tier); use --save-state at the end");
    if (!arg.flat.empty()) {
      // This rank's shard [lo, hi) of the members' concatenated local
      // blocks: each member's part is a range of its local block.
      Tensor shard = device.toHost(args[i]);
      int64_t length = arg.flat.shard(spec.mesh);
      int64_t coord = spec.mesh.coordinates(
          choose.rank())[spec.mesh.axisIndex(arg.flat.axis)];
      int64_t lo = coord * length, hi = lo + length;
      size_t elem = dtypeSize(arg.dtype);
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
        TensorInfo info{key, member.dtype, block.globalShape};
        for (const Box &box :
             boxesOfRange(member.shape, from - start, to - start)) {
          // The box's elements are contiguous in the shard: row-major
          // order within a range of the member.
          int64_t first = 0;
          for (size_t d = 0; d < box.offsets.size(); ++d)
            first = first * member.shape[d] + box.offsets[d];
          Tensor piece(box.shape, member.dtype);
          std::memcpy(piece.raw(),
                      static_cast<const char *>(shard.raw()) +
                          (start + first - lo) * elem,
                      piece.nbytes());
          std::vector<int64_t> offsets = box.offsets;
          for (size_t d = 0; d < offsets.size(); ++d)
            offsets[d] += block.offsets[d];
          writer.add(
              info, offsets, piece,
              placementOf(spec, choose.rank(),
                          "flat=" + arg.name + " over " + arg.flat.axis));
        }
      }
      continue;
    }
    std::string key = stateKeyOf(arg);
    if (key.empty() || !choose.writes(key, arg.sharding, ""))
      continue;
    LocalBlock block = choose.block(arg);
    writer.add(TensorInfo{key, arg.dtype, block.globalShape}, block.offsets,
               device.toHost(args[i]), placementOf(spec, choose.rank(), ""));
  }
}

} // namespace

void rtxrt::program::saveCheckpoint(
    const ProgramSpec &spec, ProcessGroups &groups, const ProgramDevice &device,
    const std::vector<Tensor> &args, const CheckpointFlags &flags,
    int64_t stepsDone, const std::map<std::string, std::string> &metadata) {
  int64_t rank = groups.rank();
  std::string error;
  try {
    ShardWriter writer(flags.dir, stepsDone, rank);
    writeRankChunks(spec, device, args, BlockChooser(spec, rank), writer);
    writer.finish();
  } catch (const std::exception &e) {
    error = e.what();
  }
  // Every rank learns whether all wrote their part: none hangs waiting for
  // a commit that will not come.
  int64_t failed = groups.firstFailedRank(error.empty(), "the checkpoint");
  if (failed >= 0)
    throw Error("checkpoint of step " + std::to_string(stepsDone) +
                " not committed: rank " + std::to_string(failed) +
                " could not write its part" +
                (error.empty() ? std::string() : ": " + error));
  if (rank == 0) {
    try {
      commitCheckpoint(flags.dir, stepsDone, spec.mesh.numRanks(), metadata);
      retainNewest(flags.dir, flags.keep);
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  if (groups.firstFailedRank(error.empty(), "the checkpoint's commit") >= 0)
    throw Error("checkpoint of step " + std::to_string(stepsDone) +
                " not committed" + (error.empty() ? "" : ": " + error));
}

std::shared_ptr<const CheckpointReader>
rtxrt::program::openResumeCheckpoint(const CheckpointFlags &flags,
                                     int64_t rank) {
  if (!flags.resume)
    return nullptr;
  std::vector<std::string> warnings;
  auto latest = findLatest(flags.dir, Verify::Chunks, &warnings);
  if (rank == 0) {
    for (const std::string &w : warnings)
      std::fprintf(stderr, "warning: --resume: %s\n", w.c_str());
    if (latest)
      std::printf("resume: from %s (step %lld)\n", latest->dir.c_str(),
                  static_cast<long long>(latest->step));
    else
      std::printf("resume: no committed checkpoint in %s: starting afresh\n",
                  flags.dir.c_str());
  }
  if (!latest)
    return nullptr;
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
