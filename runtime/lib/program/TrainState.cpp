//===- TrainState.cpp - what a run carries from step to step --------------===//

#include "TrainState.h"

#include "Checkpointing.h"
#include "Offload.h"
#include "StateFiles.h"
#include "StepLog.h"

#include "rtxrt/checkpoint/Checkpoint.h"

#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

TrainState::TrainState(const Run &run)
    : untilStep(run.flags.untilStep),
      offload(openOffload(run.spec, run.flags, run.self.rank)), run_(run) {}

void TrainState::load(
    std::shared_ptr<const checkpoint::CheckpointReader> from) {
  const Flags &flags = run_.flags;
  ArgumentSources sources = argumentSources(flags);
  if (from) {
    // The checkpoint wins over where the run first started from.
    if (run_.self.rank == 0 &&
        (!sources.stateDir.empty() || !sources.params.empty()))
      std::printf("resume: the checkpoint replaces %s\n",
                  sources.stateDir.empty() ? "--params" : "--state");
    sources.stateDir.clear();
    sources.params.clear();
    sources.paramsPartial = false;
    sources.checkpoint = from;
  }
  // Each argument is loaded and placed before the next: what the loader
  // read whole (a parameter this rank holds a shard of) is not held
  // through the run. Offloaded buffers go to their tier, one at a time;
  // the step gets a reference (an undefined tensor).
  ArgumentLoader loader(run_.spec.mesh, sources);
  std::vector<Tensor> loaded;
  for (const ArgSpec &arg : run_.spec.args) {
    Tensor block = loadOrOffload(loader, offload.get(), arg, run_.self.rank);
    loaded.push_back(block.defined() ? run_.device->toDevice(block) : block);
  }
  args = std::move(loaded);
  resumedMetadata_ = from ? from->manifest().metadata
                          : std::map<std::string, std::string>();
  stepsDone = from                 ? stepsDoneOf(*from)
              : flags.state.empty() ? int64_t(0)
                                    : readStepsDone(flags.state);
}

void TrainState::resume(const CheckpointFlags &resume) {
  auto reader =
      openResumeCheckpoint(resume, run_.self.rank, corruptCheckpoints_);
  resumedDir_ = reader ? reader->directory() : "";
  corruptChunk_.clear();
  try {
    load(reader);
  } catch (const checkpoint::CorruptChunk &corrupt) {
    corruptChunk_ = corrupt.what();
    load(nullptr);
  }
}

void TrainState::endAfterSteps() {
  if (run_.flags.untilStep <= 0)
    untilStep = stepsDone + run_.flags.steps;
}

void TrainState::agreeOnResume(ProcessGroups &groups,
                               const CheckpointFlags &resume) {
  while (groups.firstFailedRank(corruptChunk_.empty(),
                                "the chunks of the checkpoint --resume read") >=
         0) {
    if (!corruptChunk_.empty()) {
      // The reader's message names the checkpoint first: once is enough.
      std::string prefix = "checkpoint " + resumedDir_ + ": ";
      if (corruptChunk_.rfind(prefix, 0) == 0)
        corruptChunk_.erase(0, prefix.size());
      std::fprintf(stderr, "warning: --resume: skipping checkpoint %s: %s\n",
                   resumedDir_.c_str(), corruptChunk_.c_str());
    }
    corruptCheckpoints_.push_back(resumedDir_);
    this->resume(resume);
  }
  endAfterSteps();
}

uint64_t TrainState::hash(ProcessGroups &groups,
                          const std::vector<Tensor> &state) const {
  return groups.sumOverRanks(rankStateHash(run_.spec, *run_.device, state,
                                           run_.self.rank, offload.get()),
                             "the state hash");
}

void TrainState::measureLayout(ProcessGroups &groups) {
  layout_ = hexHash(groups.sumOverRanks(
      rankLayoutHash(run_.spec, *run_.device, args, run_.self.rank),
      "the state layout"));
}

std::string TrainState::planChange() const {
  if (resumedMetadata_.empty())
    return "";
  return planDifference(resumedMetadata_, run_.spec.mesh.spec(), layout_);
}

std::map<std::string, std::string>
TrainState::checkpointMetadata(int64_t step) const {
  return {{"program", run_.spec.name},
          {"mesh", run_.spec.mesh.spec()},
          {"run", run_.id},
          {"steps_done", std::to_string(step)},
          // Batches of --data read so far: the data position.
          {"data_position", std::to_string(step)},
          {"state_layout", layout_}};
}

void TrainState::materialize(std::vector<Tensor> &results) const {
  if (offload)
    readOffloaded(*offload, run_.spec, results);
}
