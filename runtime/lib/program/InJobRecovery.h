//===- InJobRecovery.h - survivors keep their state -------------*- C++ -*-===//
//
// Under `rtx-launch --recover in-job` (RTX_RECOVER=in-job), a rank whose
// collective fails because a peer died or hung (CommunicationError) does not
// exit: it drops its communicator, reports the loss on the RecoveryBoard,
// waits for rtx-launch to replace the lost ranks and open the next epoch,
// and meets the replacements in that epoch's rendezvous. Then the ranks
// heal: those that hold fewer steps (the replacements) receive the state
// from a survivor that holds the same blocks (a replica along an axis no
// state is split on: data parallelism), point to point. Where no survivor
// holds a lost rank's blocks (ZeRO shards, tensor-parallel state without a
// data-parallel replica), every rank reads the newest checkpoint instead.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_INJOBRECOVERY_H
#define RTXRT_LIB_PROGRAM_INJOBRECOVERY_H

#include "Groups.h"

#include "rtxrt/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rtxrt::program {

/// How this process takes part: RTX_RECOVER=in-job|restart (rtx-launch
/// --recover sets it) and RTX_RECOVER_EPOCH, the epoch a replacement
/// starts in (0 for the first ranks).
struct RecoveryMode {
  bool inJob = false;
  int64_t epoch = 0;
  static RecoveryMode fromEnvironment();
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
  bool needsCheckpoint = false; // no survivor holds some lost rank's state
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

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_INJOBRECOVERY_H
