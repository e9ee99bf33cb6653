//===- TrainState.h - what a run carries from step to step -----*- C++ -*-===//
//
// Private to librtxrt. The state of a training run as this rank holds it:
// the step's arguments (parameters, optimizer state, data), the steps done,
// the step the run ends after, the tiers of its offloaded buffers, and what
// it resumed from. It outlives the epochs of in-job recovery (Epoch.h): a
// lost peer ends an epoch, not the state.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_TRAINSTATE_H
#define RTXRT_LIB_PROGRAM_TRAINSTATE_H

#include "Run.h"

#include "rtxrt/offload/OffloadStore.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt::checkpoint {
class CheckpointReader;
} // namespace rtxrt::checkpoint

namespace rtxrt::program {

class TrainState {
public:
  /// Opens the tiers of offloaded state (rtx-shard-state{offload}).
  explicit TrainState(const Run &run);

  /// Loads the arguments: from the newest committed checkpoint of
  /// `resume.dir` when `resume.resume` (whatever plan wrote it), else from
  /// where the run first started (--state, --params, initializers); data
  /// from --inputs or drawn; offloaded buffers to their tier. A rank that
  /// finds a chunk corrupt loads from where the run started for now:
  /// agreeOnResume() settles it once the ranks meet.
  void resume(const CheckpointFlags &resume);
  /// Once the ranks meet after resume(): while any rank found a chunk
  /// corrupt, every rank skips that checkpoint and reads the next older.
  void agreeOnResume(ProcessGroups &groups, const CheckpointFlags &resume);
  /// Ends the run --steps after the steps done, unless --until-step fixed
  /// its end (a restarted job passes the same command line each time).
  void endAfterSteps();
  /// The hash of the whole of `state` (a sum over the ranks: every rank
  /// calls it).
  uint64_t hash(ProcessGroups &groups, const std::vector<Tensor> &state) const;
  /// Computes where the state's blocks are under this plan (a collective);
  /// the checkpoints record it.
  void measureLayout(ProcessGroups &groups);
  /// Why the log of the checkpoint resumed from cannot be replayed (another
  /// plan wrote it); empty when it can, or when nothing was resumed.
  std::string planChange() const;
  /// The checkpoints resume() and agreeOnResume() skipped as corrupt.
  const std::vector<std::string> &corruptCheckpoints() const {
    return corruptCheckpoints_;
  }
  /// The metadata of the checkpoint of `step`.
  std::map<std::string, std::string> checkpointMetadata(int64_t step) const;
  /// `results` with the offloaded buffers' values read back from their tier.
  void materialize(std::vector<Tensor> &results) const;

  std::vector<Tensor> args;
  int64_t stepsDone = 0;
  /// The global step the run ends after (endAfterSteps; in-job recovery
  /// takes the leader's).
  int64_t untilStep = 0;
  /// The tiers of the offloaded buffers; null when nothing is offloaded.
  std::unique_ptr<OffloadStore> offload;
  /// --deterministic: the newest step whose state was hashed, and the hash
  /// (a recovery compares the healed state with it).
  int64_t hashedStep = -1;
  uint64_t hashedState = 0;

private:
  /// Loads the arguments from `from`, or from where the run started.
  void load(std::shared_ptr<const checkpoint::CheckpointReader> from);

  const Run &run_;
  /// A hash over every rank of where the state's blocks are.
  std::string layout_;
  std::map<std::string, std::string> resumedMetadata_;
  std::string resumedDir_, corruptChunk_;
  std::vector<std::string> corruptCheckpoints_;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_TRAINSTATE_H
