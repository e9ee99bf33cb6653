//===- Epoch.h - one rendezvous of the ranks, and its steps ----*- C++ -*-===//
//
// Private to librtxrt. An epoch is one meeting of the ranks: its process
// groups (rendezvoused under the epoch's own run id, so nothing of an
// earlier meeting reaches it), the agreement on what was resumed, in-job
// healing, the step context, the step loop and the epoch's checkpoints.
// A run has one epoch, unless in-job recovery meets again after a lost
// peer (rtx-launch --recover in-job, EpochBoard.h): the TrainState goes on,
// the epoch ends.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_EPOCH_H
#define RTXRT_LIB_PROGRAM_EPOCH_H

#include "TrainState.h"

#include <string>

namespace rtxrt::program {

class Epoch {
public:
  /// Meets the other ranks (the rendezvous of epoch `number`).
  Epoch(Run &run, TrainState &state, int64_t number);

  /// How an epoch ended.
  struct Outcome {
    /// The run is over: its results are written (or it had no steps left).
    bool ended = false;
    /// In-job recovery: why a peer was lost; the state holds the steps
    /// every piece of it finished.
    std::string lost;
  };
  /// Settles what the ranks hold, runs the steps and, when they all ran,
  /// writes the results. A lost peer ends it only under in-job recovery;
  /// otherwise it throws.
  Outcome run();

private:
  /// The first epoch after --resume: every rank agrees on one checkpoint.
  /// In-job recovery: the ranks heal (Healing) and agree on the end.
  void settleState();
  void heal();
  /// The steps, their checkpoints and (when all ran) the results.
  Outcome runSteps();
  /// The run's end: the progress summary, then the results and state.
  void finishRun(std::vector<Tensor> &results, int64_t stepsDone,
                 bool preempted);

  Run &run_;
  TrainState &state_;
  int64_t number_;
  ProcessGroups groups_;
};

/// In-job recovery after epoch `epoch` lost a peer (`lost`): reports it on
/// the board and waits for the agent's decision. True when the agent opened
/// the next epoch; false when it shrinks the job (the survivors' state is
/// saved for the smaller world and this run ends). Throws when no decision
/// came.
bool awaitNextEpoch(Run &run, TrainState &state, int64_t epoch,
                    const std::string &lost);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_EPOCH_H
