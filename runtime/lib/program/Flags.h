//===- Flags.h - an emitted program's command line --------------*- C++ -*-===//

#ifndef RTXRT_LIB_PROGRAM_FLAGS_H
#define RTXRT_LIB_PROGRAM_FLAGS_H

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/program/Arguments.h"
#include "rtxrt/program/Program.h"

#include <string>

namespace rtxrt::program {

/// The longest --timeout: a day. Longer waits are a hang by another name,
/// and the milliseconds Gloo takes must not overflow.
constexpr double kMaxTimeoutSeconds = 86400;

/// Checkpoints during a run (program/Checkpointing.h).
struct CheckpointFlags {
  std::string dir;     ///< --checkpoint DIR; empty: none
  int64_t every = 0;   ///< --checkpoint-every N; 0: after the last step only
  int64_t keep = 3;    ///< --keep-checkpoints K
  bool resume = false; ///< --resume: from the newest committed one in DIR
  /// --deterministic: log each step's state hash; a resume replays the
  /// logged steps and checks them (program/StepLog.h).
  bool deterministic = false;
  int64_t walSyncEvery = 1; ///< --wal-sync-every N: fsync the log every N
  /// --preempt save|fail: SIGTERM/SIGINT commit a checkpoint and exit 0
  /// (save), or end the process as they would without --checkpoint.
  bool saveOnPreemption = true;
};

/// Held-out evaluation (StepLoop.h, docs/codegen.md): every --eval-every
/// steps the step function runs on --eval-batches fixed batches of
/// --eval-data and only its loss is kept.
struct EvalFlags {
  std::string data;    ///< --eval-data FILE; empty: no evaluation
  int64_t every = 0;   ///< --eval-every N; 0: after the last step only
  int64_t batches = 4; ///< --eval-batches K
};

struct Flags {
  int64_t steps = 1;
  /// --until-step N: run until N steps are done in all, counting those of
  /// the runs behind --resume or --state (0: --steps more steps).
  int64_t untilStep = 0;
  int64_t seed = 0;
  std::string inputs, params, out, store, data, metrics, state, saveState;
  /// --data-inputs TOKENS,LABELS: the inputs a token file feeds; empty:
  /// found by their names (TokenData.h).
  std::string dataTokens, dataLabels;
  EvalFlags eval;
  /// --timeout S: how long a collective of a step may wait for its peers.
  double timeout = 60;
  /// --timeout auto: sized to the measured step time (StepTimeout.h).
  bool timeoutAuto = false;
  /// --rendezvous-timeout S: how long ranks may take to meet at the start
  /// (never less than a fixed --timeout).
  double rendezvousTimeout = 60;
  /// Observability (docs/observability.md): --trace DIR (else $RTX_TRACE)
  /// with its steps and bound, and the Prometheus endpoint and textfile.
  TraceOptions trace;
  /// -1: no endpoint; rank r serves on metricsPort + its local rank (0:
  /// any free port, printed).
  int metricsPort = -1;
  std::string metricsHost = "127.0.0.1";
  std::string metricsTextfile;
  double metricsLinger = 0;
  /// rtx-shard-state{offload=nvme}: the folder of each rank's offload
  /// files (DIR/rank-R); a program that offloads to "cpu" refuses it.
  std::string offloadDir;
  CheckpointFlags checkpoint;
  /// GPU programs: --no-step-arena, --no-cuda-graph (StepRunner.h).
  bool noStepArena = false, noCudaGraph = false;
  bool paramsPartial = false;
  /// --tf32: f32 GEMMs of a GPU program on TF32 tensor cores.
  bool tf32 = false;
  /// --portable-kernels: a GPU program's kernels are the portable references
  /// instead of the fast ones (gpu::KernelPath::Portable).
  bool portableKernels = false;
  bool help = false;
};

/// Parses `--flag VALUE` and `--flag=VALUE`; --store defaults to $RTX_STORE.
/// Throws Error on an unknown flag or a bad value.
Flags parseFlags(const std::string &program, int argc, char **argv,
                 const LaunchHandoff &handoff);

/// --help.
void printHelp(const std::string &program, const ProgramSpec &spec);

/// Where the step's arguments come from, by the flags.
ArgumentSources argumentSources(const Flags &flags);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_FLAGS_H
