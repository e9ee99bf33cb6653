//===- Metrics.h - what a run reports about its steps -----------*- C++ -*-===//
//
// Rank 0's progress lines on stdout and the --metrics file (its writer,
// rtxrt/Metrics.h, is shared with rtx-run). Traces belong next to them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_METRICS_H
#define RTXRT_LIB_PROGRAM_METRICS_H

#include "rtxrt/Metrics.h"
#include "rtxrt/Program.h"

#include <chrono>
#include <string>

namespace rtxrt::program {

/// Reports each step and the run: lines on stdout and the metrics file on
/// rank 0, nothing on the others.
class Progress {
public:
  Progress(const ProgramSpec &spec, int64_t rank, int64_t steps,
           const std::string &metricsPath);
  void step(const StepRecord &record);
  /// The summary line after the last step.
  void done();

private:
  int64_t rank_, steps_, world_;
  /// The global size of the input named 'tokens' (0 without one): the
  /// throughput figure counts it.
  int64_t tokensPerStep_ = 0;
  MetricsFile metrics_;
  double totalMs_ = 0, totalCollectiveMs_ = 0;
  std::chrono::steady_clock::time_point start_;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_METRICS_H
