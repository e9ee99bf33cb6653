//===- Checkpointing.h - a program's checkpoints during a run ---*- C++ -*-===//
//
// --checkpoint DIR --checkpoint-every N: after every N-th step each rank
// writes its own blocks of the state (parameters, optimizer state, ZeRO
// shards as the ranges of each member they hold) as chunks of the logical
// tensors, and once every rank has, rank 0 commits the checkpoint
// (rtxrt/checkpoint/Checkpoint.h) and keeps the newest K. No state travels to rank 0.
// --resume starts from the newest committed checkpoint there: each rank
// reads only the blocks its own plan needs, whatever plan wrote them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_CHECKPOINTING_H
#define RTXRT_LIB_PROGRAM_CHECKPOINTING_H

#include "Flags.h"
#include "Groups.h"

#include "rtxrt/checkpoint/Checkpoint.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rtxrt {
class OffloadStore;
}

namespace rtxrt::program {

/// One rank's side of the checkpoints of a run. Every rank calls every
/// method at the same step boundaries. A save copies this rank's blocks of
/// the state at a step boundary and writes them in a background thread
/// while the steps go on; at most one is in flight (the next waits for
/// it). It is committed at the first step boundary where every rank has
/// written its part, or when finish() waits for it; a rank that could not
/// write its part makes finish() throw on every rank, naming that rank,
/// with the checkpoint left uncommitted.
class CheckpointSaver {
public:
  /// The manifest's metadata for the checkpoint of a step.
  using MetadataFn =
      std::function<std::map<std::string, std::string>(int64_t step)>;
  CheckpointSaver(const ProgramSpec &spec, ProcessGroups &groups,
                  const ProgramDevice &device, const CheckpointFlags &flags,
                  MetadataFn metadata);
  ~CheckpointSaver();
  CheckpointSaver(const CheckpointSaver &) = delete;
  CheckpointSaver &operator=(const CheckpointSaver &) = delete;

  /// Starts the save of the state in `args` (the next step's arguments)
  /// after `stepsDone` steps.
  void start(int64_t stepsDone, const std::vector<Tensor> &args);
  /// After every step: one small exchange. Commits the save in flight when
  /// every rank has written it; returns whether any rank was asked to stop
  /// (`stopRequested` on some rank: a pre-emption).
  bool atStepBoundary(bool stopRequested);
  /// Waits for the save in flight, if any, and commits it.
  void finish();
  /// The step of the save in flight or last committed (-1: none).
  int64_t lastStarted() const {
    return inFlight_ >= 0 ? inFlight_ : committed_;
  }
  /// The step of the last checkpoint this run committed (-1: none).
  int64_t lastCommitted() const { return committed_; }
  /// The run's offloaded state lives in `offload`: a save's writer reads
  /// it from there, one buffer at a time, while the next steps run; a
  /// step's store() of a buffer the save has not read yet waits for it.
  void setOffload(OffloadStore *offload) { offload_ = offload; }
  /// Checkpoints a resume skipped as corrupt: retention neither counts nor
  /// reads them again (a full read on rank 0, which every rank would wait
  /// for at the next commit).
  void skipCorrupt(const std::vector<std::string> &dirs) {
    for (const std::string &dir : dirs)
      retention_.knownCorrupt(dir, "--resume skipped it");
  }
  /// Called on every rank right after a checkpoint of `step` is committed
  /// (wherever the commit happens: a step boundary, the next start(),
  /// finish()), before any later save can start.
  void setOnCommitted(std::function<void(int64_t step)> onCommitted) {
    onCommitted_ = std::move(onCommitted);
  }

private:
  /// The writer's part for the offloaded buffers, in the order the steps
  /// want them.
  void writeOffloaded(checkpoint::ShardWriter &writer, int64_t rank);
  /// A step's store() of `key`: waits until the save in flight wrote it.
  void waitUntilSaved(const std::string &key);

  const ProgramSpec &spec_;
  ProcessGroups &groups_;
  const ProgramDevice &device_;
  const CheckpointFlags &flags_;
  MetadataFn metadata_;
  /// Rank 0's: what --keep-checkpoints keeps after each commit.
  checkpoint::Retention retention_;
  std::thread writer_;
  std::atomic<bool> written_{false};
  std::string error_;
  int64_t inFlight_ = -1, committed_ = -1;
  OffloadStore *offload_ = nullptr;
  std::function<void(int64_t)> onCommitted_;
  /// The offloaded buffers the save in flight has not read yet, and the one
  /// a step waits for.
  struct {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::string> keys;
    std::string wanted;
  } unsaved_;
};

/// This rank's part of the hash of the state in `args` (rtxrt/checkpoint/Wal.h's
/// StateHash over the blocks it writes to a checkpoint): the ranks' parts
/// add up to the hash of the whole state under this plan.
uint64_t rankStateHash(const ProgramSpec &spec, const ProgramDevice &device,
                       const std::vector<Tensor> &args, int64_t rank,
                       OffloadStore *offload = nullptr);

/// This rank's part of the hash of where the state's blocks are (names,
/// offsets and shapes, no values): equal sums mean that two plans cut the
/// state into the same blocks, so that their state hashes compare.
uint64_t rankLayoutHash(const ProgramSpec &spec, const ProgramDevice &device,
                        const std::vector<Tensor> &args, int64_t rank);

/// A shrinking job's save (InJobRecovery.h): only `writers` (survivors
/// holding the newest state, ascending) write, one copy of each block
/// among them; this rank, if one of them, writes its share of the state in
/// `args` as writer number (its place in `writers`) of checkpoint `step`
/// under `root`. Returns the chunks written.
int64_t writeSurvivorPart(const ProgramSpec &spec, const ProgramDevice &device,
                          const std::vector<Tensor> &args,
                          const std::string &root, int64_t step, int64_t rank,
                          const std::vector<int64_t> &writers);

/// With --resume: the newest committed checkpoint under flags.dir other
/// than the `corrupt` ones (each one skipped is named on stderr by rank 0),
/// or null when there is none (a first start). Only its manifest and its
/// files' sizes are checked here; its chunks' CRC32C when they are read.
std::shared_ptr<const checkpoint::CheckpointReader>
openResumeCheckpoint(const CheckpointFlags &flags, int64_t rank,
                     const std::vector<std::string> &corrupt = {});

/// SIGTERM and SIGINT set a flag instead of ending the process (a
/// pre-emption notice, as Slurm and Kubernetes send before they kill).
void installPreemptionHandler();
/// Whether SIGTERM or SIGINT arrived since installPreemptionHandler.
bool preemptionRequested();

/// The steps the run behind `checkpoint` had done.
int64_t stepsDoneOf(const checkpoint::CheckpointReader &checkpoint);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_CHECKPOINTING_H
