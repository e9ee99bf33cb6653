//===- EpochCheckpoints.cpp - an epoch's saves and write-ahead log --------===//

#include "EpochCheckpoints.h"

#include "rtxrt/checkpoint/Checkpoint.h"

using namespace rtxrt;
using namespace rtxrt::program;

EpochCheckpoints::EpochCheckpoints(Run &run, TrainState &state,
                                   ProcessGroups &groups,
                                   const std::string &planChange)
    : run_(run), state_(state), groups_(groups),
      saver_(run.spec, groups, *run.device, run.flags.checkpoint,
             [&state](int64_t step) { return state.checkpointMetadata(step); }),
      log_(run.flags.checkpoint, run.self.rank, state.stepsDone, planChange) {
  saver_.setOffload(state.offload.get());
  saver_.skipCorrupt(state.corruptCheckpoints());
  if (run.self.rank == 0)
    saver_.setOnCommitted([this](int64_t step) { committed(step); });
}

void EpochCheckpoints::committed(int64_t step) {
  std::vector<std::string> ignored;
  auto kept = checkpoint::findCommitted(run_.flags.checkpoint.dir,
                                        checkpoint::Verify::Manifest, &ignored);
  log_.covered(kept.empty() ? step : kept.front().step);
}

void EpochCheckpoints::startSave(int64_t stepsDone,
                                 const std::vector<Tensor> &state) {
  TraceScope scope(&run_.tracer, TraceLane::Checkpoint, "checkpoint",
                   "checkpoint");
  scope.setArgs("\"checkpoint_step\": " + std::to_string(stepsDone));
  saver_.start(stepsDone, state);
}

bool EpochCheckpoints::afterStep(int64_t stepsDone,
                                 const std::vector<Tensor> &state) {
  uint64_t stateHash = 0;
  if (log_.hashesState()) {
    stateHash = state_.hash(groups_, state);
    state_.hashedStep = stepsDone;
    state_.hashedState = stateHash;
  }
  log_.afterStep(stepsDone, stateHash);
  int64_t every = run_.flags.checkpoint.every;
  if (every > 0 && stepsDone % every == 0)
    startSave(stepsDone, state);
  preempted_ = saver_.atStepBoundary(preemptionRequested());
  return !preempted_;
}

void EpochCheckpoints::finish(int64_t stepsDone) {
  if (saver_.lastStarted() != stepsDone)
    startSave(stepsDone, state_.args);
  TraceScope scope(&run_.tracer, TraceLane::Checkpoint, "checkpoint commit",
                   "checkpoint");
  saver_.finish();
  log_.sync();
}
