//===- EpochCheckpoints.h - an epoch's saves and write-ahead log -*- C++ -*-=//
//
// Private to librtxrt. With --checkpoint, an epoch saves the state after
// every --checkpoint-every steps (written in the background while the
// steps go on), after the last step and when the run is pre-empted, and
// logs every step between checkpoints (StepLog.h), with the state's hash
// under --deterministic. One per epoch: its saver and log live in the
// epoch's process groups.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_EPOCHCHECKPOINTS_H
#define RTXRT_LIB_PROGRAM_EPOCHCHECKPOINTS_H

#include "Checkpointing.h"
#include "StepLog.h"
#include "TrainState.h"

namespace rtxrt::program {

class EpochCheckpoints {
public:
  EpochCheckpoints(Run &run, TrainState &state, ProcessGroups &groups,
                   const std::string &planChange);

  /// After each step: logs it, starts a save when one is due, and commits
  /// a save every rank has written. False when the run is pre-empted: it
  /// stops after this step.
  bool afterStep(int64_t stepsDone, const std::vector<Tensor> &state);
  /// After the last step: saves it (unless saved already) and waits for
  /// the save to commit; makes the log durable.
  void finish(int64_t stepsDone);
  bool preempted() const { return preempted_; }

private:
  void startSave(int64_t stepsDone, const std::vector<Tensor> &state);
  /// After each commit, at once (a crash in a later save must find the log
  /// cut): the log keeps only what no kept checkpoint covers (rank 0).
  void committed(int64_t step);

  Run &run_;
  TrainState &state_;
  ProcessGroups &groups_;
  CheckpointSaver saver_;
  StepLog log_;
  bool preempted_ = false;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_EPOCHCHECKPOINTS_H
