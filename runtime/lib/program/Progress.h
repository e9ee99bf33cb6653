//===- Metrics.h - what a run reports about its steps -----------*- C++ -*-===//
//
// Rank 0's progress lines on stdout and the --metrics file (its writer,
// rtxrt/observe/MetricsFile.h, is shared with rtx-run). Traces belong next to them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_PROGRESS_H
#define RTXRT_LIB_PROGRAM_PROGRESS_H

#include "Flags.h"
#include "observe/Prometheus.h"

#include "rtxrt/observe/MetricsFile.h"
#include "rtxrt/program/Program.h"

#include <chrono>
#include <memory>
#include <string>

namespace rtxrt::program {

/// Where a rank stands, for the labels and the port of its metrics.
struct MetricsPlace {
  int64_t rank = 0, localRank = 0;
  std::string run;
};

/// Reports each step and the run: lines on stdout and the --metrics file on
/// rank 0; on every rank the Prometheus endpoint and textfile when asked
/// for, and DIR/rank-R.metrics.jsonl next to a trace.
class Progress {
public:
  /// `lastStep`: the global step the run ends after (its progress lines
  /// count global steps, so that a resumed or recovered run goes on from
  /// where it was: "step 21/60"). `tokensInput`: the input whose size the
  /// throughput counts.
  Progress(const ProgramSpec &spec, const MetricsPlace &place, int64_t lastStep,
           const Flags &flags, const std::string &tokensInput = "tokens");
  ~Progress();
  /// Completes `record` with the step's communication and memory figures
  /// and reports it.
  void step(StepRecord record, const CommunicationStats &comm);
  /// A held-out evaluation (--eval-data): rank 0's line and its own JSON
  /// line in the --metrics file; every rank's eval_loss gauge.
  void evaluation(const EvalRecord &record);
  /// The global step of the last evaluation reported (-1: none).
  int64_t lastEvalStep() const { return lastEvalStep_; }
  /// The summary line after the last step (the steps step() reported, not
  /// those planned: a pre-emption stops early, a recovery runs some again);
  /// keeps /metrics up for --metrics-linger seconds.
  void done();

private:
  void linger();
  int64_t rank_, lastStep_, world_;
  /// The global size of the token input (0 without one): the throughput
  /// figure counts it.
  int64_t tokensPerStep_ = 0;
  MetricsFile metrics_;
  /// Every rank's own lines, next to its trace.
  MetricsFile rankMetrics_;
  const DeviceRuntime *device_;
  RunMetrics run_;
  std::unique_ptr<MetricsServer> server_;
  std::string textfileDir_;
  double lingerSeconds_;
  double totalMs_ = 0, totalCollectiveMs_ = 0;
  /// The steps step() reported.
  int64_t ran_ = 0;
  int64_t lastEvalStep_ = -1;
  std::chrono::steady_clock::time_point start_;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_PROGRESS_H
