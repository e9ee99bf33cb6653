//===- Metrics.h - what a run reports about its steps -----------*- C++ -*-===//
//
// Rank 0's progress lines on stdout and the --metrics file (one JSON line
// per step, the names of design.md's metrics). Traces belong next to them.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_METRICS_H
#define RTXRT_LIB_PROGRAM_METRICS_H

#include "rtxrt/Program.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace rtxrt::program {

/// What one step measured.
struct StepRecord {
  int64_t step = 0; // 1-based, in this run
  bool hasLoss = false;
  double loss = 0;
  double ms = 0;           // the step's time, its queued device work included
  double collectiveMs = 0; // time the step waited in collectives
};

/// --metrics FILE: one JSON object per line and step. Non-finite numbers
/// are written as null, which JSON can hold.
class MetricsFile {
public:
  /// No file when `path` is empty.
  explicit MetricsFile(const std::string &path);
  ~MetricsFile();
  MetricsFile(const MetricsFile &) = delete;
  MetricsFile &operator=(const MetricsFile &) = delete;

  void step(const StepRecord &record, double tokensPerSecond);

private:
  std::FILE *file_ = nullptr;
};

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
