//===- Progress.cpp - the progress line, metrics file and endpoint ------===//

#include "Progress.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::program;

static MetricLabels labelsOf(const ProgramSpec &spec,
                             const MetricsPlace &place) {
  MetricLabels labels;
  labels.rank = place.rank;
  labels.mesh = spec.mesh.spec();
  labels.run = place.run;
  return labels;
}

Progress::Progress(const ProgramSpec &spec, const MetricsPlace &place,
                   int64_t lastStep, const Flags &flags,
                   const std::string &tokensInput)
    : rank_(place.rank), lastStep_(lastStep), world_(spec.mesh.numRanks()),
      tokensPerStep_(tokensPerStep(spec.args, spec.mesh, tokensInput)),
      // A resumed run (a restart round) adds its lines to the file of the
      // run it continues: global_step tells the steps apart.
      metrics_(place.rank == 0 ? flags.metrics : std::string(),
               flags.checkpoint.resume),
      rankMetrics_(flags.trace.dir.empty()
                       ? std::string()
                       : flags.trace.dir + "/rank-" +
                             std::to_string(place.rank) + ".metrics.jsonl"),
      device_(spec.device), run_(labelsOf(spec, place)),
      textfileDir_(flags.metricsTextfile), lingerSeconds_(flags.metricsLinger),
      start_(std::chrono::steady_clock::now()) {
  if (flags.metricsPort >= 0) {
    int port = flags.metricsPort == 0
                   ? 0
                   : flags.metricsPort + static_cast<int>(place.localRank);
    if (port > 65535)
      throw Error("--metrics-port " + std::to_string(flags.metricsPort) +
                  " + local rank " + std::to_string(place.localRank) +
                  " is past port 65535");
    server_ = std::make_unique<MetricsServer>(run_, flags.metricsHost, port);
    std::printf("metrics: rank %lld serves http://%s:%d/metrics\n",
                static_cast<long long>(place.rank), flags.metricsHost.c_str(),
                server_->port());
    std::fflush(stdout);
  }
  if (!textfileDir_.empty()) // a directory that cannot be written fails now
    writeMetricsTextfile(textfileDir_, rank_, run_.exposition());
}

Progress::~Progress() = default;

void Progress::step(StepRecord r, const CommunicationStats &comm) {
  StepFigures figures;
  figures.ms = r.ms;
  figures.tokensPerSecond = tokensPerSecond(tokensPerStep_, r.ms);
  figures.loss = r.hasLoss ? r.loss : std::nan("");
  figures.lr = r.lr.value_or(std::nan(""));
  figures.comm = comm;
  figures.host = hostAllocatorStats();
  if (device_ && device_->allocatorStats)
    figures.device = device_->allocatorStats();
  r.collectiveMs = comm.exposedSeconds * 1000.0;
  r.allReducePct = allReducePercent(figures);
  r.overlapPct = overlapPercent(comm);
  r.netBwGBps = busBandwidthGBps(comm);
  r.peakBytes =
      figures.device ? figures.device->peakBytes : figures.host.peakBytes;
  r.stepPeakBytes = figures.device ? figures.device->windowPeakBytes
                                   : figures.host.windowPeakBytes;
  ++ran_;
  totalMs_ += r.ms;
  totalCollectiveMs_ += r.collectiveMs.value_or(0.0);
  double perSecond = figures.tokensPerSecond;
  // The JSON lines first, then the scraped figures: whoever sees step N on
  // /metrics (or in the textfile) finds its line already flushed.
  metrics_.step(r, perSecond);
  rankMetrics_.step(r, perSecond);
  run_.step(figures);
  if (!textfileDir_.empty())
    writeMetricsTextfile(textfileDir_, rank_, run_.exposition());
  if (!r.hasLoss)
    return;
  if (rank_ == 0) {
    std::printf("step %lld/%lld: loss=%.6e time=%.1fms",
                static_cast<long long>(r.globalStep),
                static_cast<long long>(lastStep_), r.loss, r.ms);
    if (std::isfinite(perSecond))
      std::printf(" tokens/s=%.0f", perSecond);
    std::printf("\n");
  }
  std::fflush(stdout);
}

void Progress::evaluation(const EvalRecord &record) {
  // The JSON line first, as for a step (Progress::step).
  lastEvalStep_ = record.globalStep;
  metrics_.evaluation(record);
  run_.evaluation(record.globalStep, record.loss);
  if (!textfileDir_.empty())
    writeMetricsTextfile(textfileDir_, rank_, run_.exposition());
  if (rank_ != 0)
    return;
  std::printf("step %lld: held-out loss %.6e (%lld batches)\n",
              static_cast<long long>(record.globalStep), record.loss,
              static_cast<long long>(record.batches));
  std::fflush(stdout);
}

void Progress::done() {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  if (rank_ != 0) {
    linger();
    return;
  }
  std::printf("done: %lld step(s) in %.3f s", static_cast<long long>(ran_),
              seconds);
  if (tokensPerStep_ > 0 && seconds > 0)
    std::printf(", %.0f tokens/s",
                tokensPerStep_ * static_cast<double>(ran_) / seconds);
  if (world_ > 1 && totalMs_ > 0)
    std::printf(", %.1f%% of the step time waiting in collectives (rank 0)",
                100.0 * totalCollectiveMs_ / totalMs_);
  std::printf("\n");
  std::fflush(stdout);
  linger();
}

void Progress::linger() {
  if (server_ && lingerSeconds_ > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(lingerSeconds_));
}
