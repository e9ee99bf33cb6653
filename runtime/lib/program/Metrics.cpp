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
  std::string line =
      "{\"step\": " + std::to_string(r.step) +
      ", \"loss\": " + jsonNumber(r.hasLoss ? r.loss : std::nan(""), "%.9g") +
      ", \"step_time_ms\": " + jsonNumber(r.ms, "%.3f") +
      ", \"tokens_per_s\": " + jsonNumber(tokensPerSecond, "%.1f");
  if (r.collectiveMs)
    line += ", \"collective_ms\": " + jsonNumber(*r.collectiveMs, "%.3f") +
            ", \"collective_pct\": " +
            jsonNumber(r.ms > 0 ? 100.0 * *r.collectiveMs / r.ms : std::nan(""),
                       "%.2f");
  std::fprintf(file_, "%s}\n", line.c_str());
  std::fflush(file_); // a run that dies keeps the steps it finished
}

int64_t rtxrt::tokensPerStep(const std::vector<ArgSpec> &args,
                             const MeshLayout &mesh) {
  for (const ArgSpec &arg : args)
    if (arg.kind == ArgSpec::Input && arg.name == "tokens")
      return numElements(
          localBlock(arg.sharding, arg.shape, mesh, 0).globalShape);
  return 0;
}

double rtxrt::tokensPerSecond(int64_t tokensPerStep, double ms) {
  return tokensPerStep > 0 && ms > 0 ? tokensPerStep * 1000.0 / ms
                                     : std::nan("");
}

Progress::Progress(const ProgramSpec &spec, int64_t rank, int64_t steps,
                   const std::string &metricsPath)
    : rank_(rank), steps_(steps), world_(spec.mesh.numRanks()),
      tokensPerStep_(tokensPerStep(spec.args, spec.mesh)),
      metrics_(rank == 0 ? metricsPath : std::string()),
      start_(std::chrono::steady_clock::now()) {}

void Progress::step(const StepRecord &r) {
  totalMs_ += r.ms;
  totalCollectiveMs_ += r.collectiveMs.value_or(0.0);
  double perSecond = tokensPerSecond(tokensPerStep_, r.ms);
  metrics_.step(r, perSecond);
  if (!r.hasLoss)
    return;
  if (rank_ == 0) {
    std::printf("step %lld/%lld: loss=%.6e time=%.1fms",
                static_cast<long long>(r.step),
                static_cast<long long>(steps_), r.loss, r.ms);
    if (std::isfinite(perSecond))
      std::printf(" tokens/s=%.0f", perSecond);
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
