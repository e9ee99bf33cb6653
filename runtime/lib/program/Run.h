//===- Run.h - what a run decides once, before its first epoch -*- C++ -*-===//
//
// Private to librtxrt. A run of an emitted program: its command line, this
// rank's place and part of the program, its device, the run id its store
// keys, metrics, traces and checkpoints carry, the timeouts, the recovery
// mode and the data. All of it is set by start() and then read by the
// run's TrainState and Epochs (TrainState.h, Epoch.h); only the tracer and
// the progress report change as the steps go.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_RUN_H
#define RTXRT_LIB_PROGRAM_RUN_H

#include "Flags.h"
#include "Groups.h"
#include "InJobRecovery.h"
#include "Progress.h"
#include "StepTimeout.h"
#include "TokenData.h"

#include "rtxrt/elastic/EpochBoard.h"
#include "rtxrt/comm/Communicator.h"
#include "rtxrt/observe/Trace.h"
#include "rtxrt/program/Program.h"

#include <optional>
#include <string>

namespace rtxrt::program {

class Run {
public:
  explicit Run(const ProgramSpec &whole) : whole(whole), spec(whole) {}

  /// Parses the command line and the launcher's handoff, checks this
  /// rank's place and takes its part of the program. False for --help
  /// (printed). Throws rtxrt::Error on bad input.
  bool start(int argc, char **argv);
  /// Opens the data and starts the progress report of the steps up to the
  /// global step `untilStep` (known once the state is resumed), and the
  /// recovery board under in-job recovery.
  void startProgress(int64_t untilStep);
  /// --eval-data, feeding `inputs`; refused for a program that offloads.
  void openEvalData(const TokenInputs &inputs);
  /// Where epoch `epoch` meets: the store, under the epoch's run id.
  Rendezvous rendezvous(int64_t epoch) const;
  /// Writes the trace, also after a failure (what it recorded up to there
  /// helps to find why). False when it could not be written (said on
  /// stderr); that never hides the run's own error.
  bool writeTrace() const;
  /// "NAME: rank R: " for messages.
  std::string who() const;

  const ProgramSpec &whole; ///< every rank's program
  ProgramSpec spec;         ///< this rank's part (its pipeline stage)
  Placement self;
  Flags flags;
  /// The id every rank of this run shares: metrics, traces, checkpoints.
  std::string id;
  Tracer tracer;
  std::optional<ProgramDevice> device;
  std::optional<StepTimeout> timeout;
  RecoveryMode recovery;
  std::optional<TokenData> data;
  /// --eval-data: the held-out batches (the inputs --data feeds).
  std::optional<TokenData> evalData;
  std::optional<Progress> progress;
  /// In-job recovery: where this rank reports a lost peer and learns what
  /// the agent (rtx-launch) decided.
  std::optional<EpochBoard> board;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_RUN_H
