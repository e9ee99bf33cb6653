//===- InJobRecovery.h - survivors keep their state -------------*- C++ -*-===//
//
// Under `rtx-launch --recover in-job` (RTX_RECOVER=in-job), a rank whose
// collective fails because a peer died or hung (CommunicationError) does not
// exit: it drops its communicator, reports the loss on the EpochBoard,
// waits for rtx-launch to replace the lost ranks and open the next epoch,
// and meets the replacements in that epoch's rendezvous. Then the ranks
// heal: those that hold fewer steps (the replacements) receive the state
// from a survivor that holds the same blocks (a replica along an axis no
// state is split on: data parallelism), point to point. Where no survivor
// holds a lost rank's blocks (ZeRO shards, tensor-parallel state without a
// data-parallel replica), every rank reads the newest checkpoint instead.
//
// A job that may shrink (rtx-launch --min-ranks with --recover in-job)
// goes on in a smaller world, which is another program: the agent asks the
// survivors to save instead (saveForShrink), and starts the smaller world
// with --resume, from the survivors' newest step rather than the last
// periodic checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_INJOBRECOVERY_H
#define RTXRT_LIB_PROGRAM_INJOBRECOVERY_H

#include "Flags.h"
#include "Groups.h"

#include "rtxrt/elastic/EpochBoard.h"
#include "rtxrt/program/Program.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rtxrt::program {

/// How this process takes part, from rtx-launch's handoff (LaunchHandoff,
/// rtxrt/elastic/LaunchEnvironment.h): in-job recovery or restarts
/// (--recover), and the epoch a replacement starts in (0 for the first
/// ranks).
struct RecoveryMode {
  bool inJob = false;
  int64_t epoch = 0;
  static RecoveryMode of(const LaunchHandoff &handoff);
};

/// For each rank, the survivor it heals from: itself when it holds the
/// newest step, another rank with the newest step and the same blocks of
/// every piece of state, or -1 when none has them. `steps` is each rank's
/// number of steps done.
std::vector<int64_t> healSources(const ProgramSpec &spec,
                                 const std::vector<int64_t> &steps);

/// What healing did.
struct Healing {
  int64_t stepsDone = 0;        // the steps every rank holds now
  bool needsCheckpoint = false; // every rank reads the newest checkpoint
  std::string why;              // why it does
  int64_t received = 0;         // tensors this rank received
  int64_t source = -1;          // the rank it received them from
  int64_t leader = 0; // the first rank with the most steps: its end counts
};

/// After a rendezvous in a recovery epoch: exchanges the ranks' steps and
/// sends the state of `args` from survivors to the ranks that lack it.
/// `whole` decides who heals from whom (every rank decides the same, also
/// when pipeline stages hold different state); `stage` is this rank's view
/// (its arguments, as `args` holds them).
Healing healFromPeers(const ProgramSpec &whole, const ProgramSpec &stage,
                      ProcessGroups &groups, const ProgramDevice &device,
                      std::vector<Tensor> &args, int64_t stepsDone);

/// --deterministic: after peers healed, the whole state must hash as it did
/// after that step. The leader (the survivor whose end counts) says which
/// step it hashed last (`hashedStep`, -1 for none) and its hash; when that
/// is the healed step, every rank computes `stateHash()` (a collective) and
/// a difference is an error naming the step; otherwise (the loss came while
/// that hash was summed) rank 0 says that nothing is compared.
void checkHealedHash(ProcessGroups &groups, const Healing &healed,
                     int64_t hashedStep, uint64_t hashedState,
                     const std::function<uint64_t()> &stateHash);

/// What saveForShrink did.
struct ShrinkSave {
  bool committed = false; // a checkpoint of `step` is committed (now or before)
  int64_t step = -1;      // the newest step the survivors hold
  std::string why;        // why nothing was saved, or the error
  bool speaks = false;    // this rank says what happened (one survivor does)
};

/// The survivors' save when the agent shrinks the job after a loss in
/// `epoch` (EpochBoard::shrinking). Every survivor calls it. Those that
/// hold the newest step write one copy of each block of the state among
/// them into a checkpoint of that step under flags.dir (no collective: the
/// board says who writes what), and the first of them commits it with
/// `metadata` once every one wrote its part. Nothing is written when the
/// survivors lack some lost rank's blocks (ZeRO shards), when that step is
/// committed already, or without --checkpoint: the smaller world then
/// resumes from the newest committed checkpoint.
ShrinkSave saveForShrink(
    const ProgramSpec &whole, const ProgramSpec &spec,
    const ProgramDevice &device, const std::vector<Tensor> &args,
    const CheckpointFlags &flags, EpochBoard &board, int64_t epoch,
    int64_t rank, double timeoutSeconds,
    const std::function<std::map<std::string, std::string>(int64_t)> &metadata);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_INJOBRECOVERY_H
