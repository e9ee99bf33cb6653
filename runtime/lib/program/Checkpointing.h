//===- Checkpointing.h - a program's checkpoints during a run ---*- C++ -*-===//
//
// --checkpoint DIR --checkpoint-every N: after every N-th step each rank
// writes its own blocks of the state (parameters, optimizer state, ZeRO
// shards as the ranges of each member they hold) as chunks of the logical
// tensors, and once every rank has, rank 0 commits the checkpoint
// (rtxrt/Checkpoint.h) and keeps the newest K. No state travels to rank 0.
// --resume starts from the newest committed checkpoint there: each rank
// reads only the blocks its own plan needs, whatever plan wrote them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_CHECKPOINTING_H
#define RTXRT_LIB_PROGRAM_CHECKPOINTING_H

#include "Flags.h"
#include "Groups.h"

#include "rtxrt/Checkpoint.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt::program {

/// Writes the checkpoint of the state in `args` (the arguments of the next
/// step) after `stepsDone` steps, and applies retention. Every rank calls
/// it; it returns once the checkpoint is committed, or throws on every rank
/// (naming the rank that failed) when any rank could not write its part,
/// leaving the checkpoint uncommitted.
void saveCheckpoint(const ProgramSpec &spec, ProcessGroups &groups,
                    const ProgramDevice &device,
                    const std::vector<Tensor> &args,
                    const CheckpointFlags &flags, int64_t stepsDone,
                    const std::map<std::string, std::string> &metadata);

/// With --resume: the newest committed checkpoint under flags.dir (each
/// one skipped is named on stderr by rank 0), or null when there is none
/// (a first start).
std::shared_ptr<const checkpoint::CheckpointReader>
openResumeCheckpoint(const CheckpointFlags &flags, int64_t rank);

/// SIGTERM and SIGINT set a flag instead of ending the process (a
/// pre-emption notice, as Slurm and Kubernetes send before they kill).
void installPreemptionHandler();
/// Whether SIGTERM or SIGINT arrived since installPreemptionHandler.
bool preemptionRequested();

/// The steps the run behind `checkpoint` had done.
int64_t stepsDoneOf(const checkpoint::CheckpointReader &checkpoint);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_CHECKPOINTING_H
