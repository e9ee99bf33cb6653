//===- Metrics.cpp - what a run reports about its steps -------------------===//

#include "Metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>

using namespace rtxrt;
using namespace rtxrt::program;

MetricsFile::MetricsFile(const std::string &path) {
  if (path.empty())
    return;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw Error("cannot write the metrics file " + path + ": " +
                std::strerror(errno));
}

MetricsFile::~MetricsFile() {
  if (file_)
    std::fclose(file_);
}

static std::string jsonNumber(double value, const char *format) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

void MetricsFile::step(const StepRecord &r, double tokensPerSecond) {
  if (!file_)
    return;
  std::fprintf(
      file_,
      "{\"step\": %lld, \"loss\": %s, \"step_time_ms\": %s, "
      "\"tokens_per_s\": %s, \"collective_ms\": %s, "
      "\"collective_pct\": %s}\n",
      static_cast<long long>(r.step),
      jsonNumber(r.hasLoss ? r.loss : std::nan(""), "%.9g").c_str(),
      jsonNumber(r.ms, "%.3f").c_str(),
      jsonNumber(tokensPerSecond, "%.1f").c_str(),
      jsonNumber(r.collectiveMs, "%.3f").c_str(),
      jsonNumber(r.ms > 0 ? 100.0 * r.collectiveMs / r.ms : std::nan(""),
                 "%.2f")
          .c_str());
  std::fflush(file_); // a run that dies keeps the steps it finished
}

Progress::Progress(const ProgramSpec &spec, int64_t rank, int64_t steps,
                   const std::string &metricsPath)
    : rank_(rank), steps_(steps), world_(spec.mesh.numRanks()),
      metrics_(rank == 0 ? metricsPath : std::string()),
      start_(std::chrono::steady_clock::now()) {
  for (const ArgSpec &arg : spec.args)
    if (arg.kind == ArgSpec::Input && arg.name == "tokens")
      tokensPerStep_ = numElements(
          localBlock(arg.sharding, arg.shape, spec.mesh, rank).globalShape);
}

void Progress::step(const StepRecord &r) {
  totalMs_ += r.ms;
  totalCollectiveMs_ += r.collectiveMs;
  double tokensPerSecond = tokensPerStep_ > 0 && r.ms > 0
                               ? tokensPerStep_ * 1000.0 / r.ms
                               : std::nan("");
  metrics_.step(r, tokensPerSecond);
  if (!r.hasLoss)
    return;
  if (rank_ == 0) {
    std::printf("step %lld/%lld: loss=%.6e time=%.1fms",
                static_cast<long long>(r.step),
                static_cast<long long>(steps_), r.loss, r.ms);
    if (tokensPerStep_ > 0 && r.ms > 0)
      std::printf(" tokens/s=%.0f", tokensPerSecond);
    std::printf("\n");
  }
  std::fflush(stdout);
}

void Progress::done() {
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start_)
                       .count();
  if (rank_ != 0)
    return;
  std::printf("done: %lld step(s) in %.3f s", static_cast<long long>(steps_),
              seconds);
  if (tokensPerStep_ > 0 && seconds > 0)
    std::printf(", %.0f tokens/s",
                tokensPerStep_ * static_cast<double>(steps_) / seconds);
  if (world_ > 1 && totalMs_ > 0)
    std::printf(", %.1f%% of the step time waiting in collectives (rank 0)",
                100.0 * totalCollectiveMs_ / totalMs_);
  std::printf("\n");
}
