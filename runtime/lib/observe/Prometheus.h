//===- Prometheus.h - a rank's metrics for Prometheus -----------*- C++ -*-===//
//
// Each rank keeps the figures of its steps (RunMetrics) and exposes them in
// Prometheus' text exposition format (version 0.0.4): on /metrics of a small
// HTTP server (cpp-httplib, Debian's libcpp-httplib-dev) with
// --metrics-port, and as a node-exporter textfile-collector file with
// --metrics-textfile. The names are those of the plan rtx comes from;
// docs/observability.md lists them with their units.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_PROMETHEUS_H
#define RTXRT_LIB_PROGRAM_PROMETHEUS_H

#include "rtxrt/core/AllocatorStats.h"
#include "rtxrt/observe/MetricsFile.h"
#include "rtxrt/observe/CommunicationStats.h"

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace rtxrt::program {

/// The labels every series carries.
struct MetricLabels {
  int64_t rank = 0;
  std::string mesh, run;
};

/// One step's figures as the metrics need them.
struct StepFigures {
  double ms = 0;
  double tokensPerSecond = 0; // NaN without tokens
  double loss = 0;            // NaN: the step gave no loss (a pipeline stage)
  double lr = 0;              // NaN: the program does not know its rate
  CommunicationStats comm;
  AllocatorStats host;
  std::optional<AllocatorStats> device; // GPU programs
};

/// Derived figures of a step, shared by the JSON lines and Prometheus.
/// NaN where the step has nothing to measure (no communication).
double allReducePercent(const StepFigures &f);
double overlapPercent(const CommunicationStats &comm);
double busBandwidthGBps(const CommunicationStats &comm);

/// Thread-safe: the HTTP server's thread reads while the steps write.
class RunMetrics {
public:
  explicit RunMetrics(MetricLabels labels);
  void step(const StepFigures &figures);
  /// A held-out evaluation (--eval-data): its loss and step become the
  /// eval_loss and eval_step gauges.
  void evaluation(int64_t globalStep, double loss);
  /// The text exposition format of everything so far.
  std::string exposition() const;
  /// The step-time quantile q (0..1) over the last steps kept.
  double stepTimeQuantile(double q) const;

private:
  /// Steps kept for the quantiles (the summary's window).
  static constexpr size_t kWindow = 1024;
  MetricLabels labels_;
  mutable std::mutex mutex_;
  std::deque<double> recentMs_;
  double sumMs_ = 0;
  int64_t count_ = 0;
  StepFigures last_;
  double busySeconds_ = 0, exposedSeconds_ = 0;
  /// The last evaluation's step and loss; none: the series are left out.
  std::optional<std::pair<int64_t, double>> lastEval_;
};

/// Serves RunMetrics::exposition() on http://HOST:PORT/metrics until
/// destroyed. Throws Error naming the port when it cannot listen.
class MetricsServer {
public:
  MetricsServer(const RunMetrics &metrics, const std::string &host, int port);
  ~MetricsServer();
  MetricsServer(const MetricsServer &) = delete;
  MetricsServer &operator=(const MetricsServer &) = delete;
  int port() const { return port_; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_;
};

/// Writes `text` as DIR/rtx_rank_R.prom for node-exporter's textfile
/// collector: to a temporary name in DIR, then renamed, so the collector
/// never reads half a file.
void writeMetricsTextfile(const std::string &dir, int64_t rank,
                          const std::string &text);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_PROMETHEUS_H
