//===- MetricsFile.h - the --metrics file of a run --------------*- C++ -*-===//
//
// One JSON object per line and step, the names of design.md's metrics. The
// emitted programs (runProgram, rank 0) and rtx-run's executor write it with
// this one writer, so that a reader (python/rtx/results.py) sees one format.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OBSERVE_METRICSFILE_H
#define RTXRT_OBSERVE_METRICSFILE_H

#include "rtxrt/core/ArgSpec.h"
#include "rtxrt/core/MeshLayout.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace rtxrt {

/// What one step measured.
struct StepRecord {
  int64_t step = 0; // 1-based, in this run
  /// The steps done in all after it: those of the runs behind --resume or
  /// --state included (equal to `step` in a fresh run).
  int64_t globalStep = 0;
  bool hasLoss = false;
  double loss = 0;
  /// The optimizer's learning rate of this step, where the program knows
  /// it (ProgramSpec::lrSchedule).
  std::optional<double> lr;
  double ms = 0; // the step's time, its queued device work included
  /// Time the step waited in collectives; empty where the run cannot
  /// measure it (rtx-run's simulated ranks), and the file then has no
  /// collective_ms and collective_pct.
  std::optional<double> collectiveMs;
  /// Emitted programs also measure these (docs/observability.md); a NaN is
  /// written as null.
  std::optional<double> allReducePct, overlapPct, netBwGBps;
  std::optional<int64_t> peakBytes;
  /// The most bytes held during this step alone (what rtx-plan-memory
  /// predicts).
  std::optional<int64_t> stepPeakBytes;
  /// Offloaded state (rtx-shard-state{offload}, docs/fsdp.md): this step's
  /// transfers with the tier and their bytes, the time the step waited for
  /// it (slots and data), the most bytes in flight so far (fetched buffers
  /// held, writes, staging) and the store's bound on them.
  std::optional<int64_t> offloadTransfers, offloadBytes,
      offloadPeakInFlightBytes, offloadBoundBytes;
  std::optional<double> offloadWaitMs;
};

/// One held-out evaluation (--eval-data): the mean loss over its batches.
struct EvalRecord {
  /// The steps done in all when it ran (as StepRecord::globalStep).
  int64_t globalStep = 0;
  double loss = 0;
  int64_t batches = 0; ///< global batches evaluated
  int64_t tokens = 0;  ///< label tokens in them
};

/// --metrics FILE: one JSON object per line and step (step, loss, lr,
/// step_time_ms, tokens_per_s, collective_ms, collective_pct, and where
/// measured allreduce_pct, overlap_pct, net_bw_gbps, peak_bytes). A step
/// without a loss and non-finite numbers are written as null, which JSON can
/// hold; a figure the run did not measure is left out. Each line is flushed:
/// a run that dies keeps the steps it finished.
class MetricsFile {
public:
  /// No file when `path` is empty; an Error when it cannot be written.
  /// `append`: after the lines already there (a resumed run's).
  explicit MetricsFile(const std::string &path, bool append = false);
  ~MetricsFile();
  MetricsFile(const MetricsFile &) = delete;
  MetricsFile &operator=(const MetricsFile &) = delete;

  /// `tokensPerSecond`: NaN when the step has no token count.
  void step(const StepRecord &record, double tokensPerSecond);
  /// An evaluation's own line: {"eval_step": S, "eval_loss": X,
  /// "eval_batches": K, "eval_tokens": N}.
  void evaluation(const EvalRecord &record);

private:
  std::FILE *file_ = nullptr;
};

/// The global number of elements of the input named `name` (0 without
/// one): the throughput figure counts it.
int64_t tokensPerStep(const std::vector<ArgSpec> &args, const MeshLayout &mesh,
                      const std::string &name = "tokens");

/// Tokens per second of a step of `ms` milliseconds; NaN without tokens.
double tokensPerSecond(int64_t tokensPerStep, double ms);

} // namespace rtxrt

#endif // RTXRT_OBSERVE_METRICSFILE_H
