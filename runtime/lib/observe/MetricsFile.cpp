//===- MetricsFile.cpp - one JSON line per step ---------------------------===//

#include "rtxrt/observe/MetricsFile.h"

#include <cerrno>
#include <cmath>
#include <cstring>

using namespace rtxrt;

MetricsFile::MetricsFile(const std::string &path, bool append) {
  if (path.empty())
    return;
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
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
      ", \"global_step\": " + std::to_string(r.globalStep) +
      ", \"loss\": " + jsonNumber(r.hasLoss ? r.loss : std::nan(""), "%.9g") +
      (r.lr ? ", \"lr\": " + jsonNumber(*r.lr, "%.9g") : std::string()) +
      ", \"step_time_ms\": " + jsonNumber(r.ms, "%.3f") +
      ", \"tokens_per_s\": " + jsonNumber(tokensPerSecond, "%.1f");
  if (r.collectiveMs)
    line += ", \"collective_ms\": " + jsonNumber(*r.collectiveMs, "%.3f") +
            ", \"collective_pct\": " +
            jsonNumber(r.ms > 0 ? 100.0 * *r.collectiveMs / r.ms : std::nan(""),
                       "%.2f");
  auto optional = [&](const char *key, const std::optional<double> &v,
                      const char *format) {
    if (v)
      line += std::string(", \"") + key + "\": " + jsonNumber(*v, format);
  };
  optional("allreduce_pct", r.allReducePct, "%.2f");
  optional("overlap_pct", r.overlapPct, "%.2f");
  optional("net_bw_gbps", r.netBwGBps, "%.6g");
  if (r.peakBytes)
    line += ", \"peak_bytes\": " + std::to_string(*r.peakBytes);
  if (r.stepPeakBytes)
    line += ", \"step_peak_bytes\": " + std::to_string(*r.stepPeakBytes);
  auto integer = [&](const char *key, const std::optional<int64_t> &v) {
    if (v)
      line += std::string(", \"") + key + "\": " + std::to_string(*v);
  };
  integer("offload_transfers", r.offloadTransfers);
  integer("offload_bytes", r.offloadBytes);
  optional("offload_wait_ms", r.offloadWaitMs, "%.3f");
  integer("offload_peak_inflight_bytes", r.offloadPeakInFlightBytes);
  integer("offload_bound_bytes", r.offloadBoundBytes);
  std::fprintf(file_, "%s}\n", line.c_str());
  std::fflush(file_); // a run that dies keeps the steps it finished
}

void MetricsFile::evaluation(const EvalRecord &r) {
  if (!file_)
    return;
  std::fprintf(
      file_,
      "{\"eval_step\": %lld, \"eval_loss\": %s, \"eval_batches\": "
      "%lld, \"eval_tokens\": %lld}\n",
      static_cast<long long>(r.globalStep), jsonNumber(r.loss, "%.9g").c_str(),
      static_cast<long long>(r.batches), static_cast<long long>(r.tokens));
  std::fflush(file_);
}

int64_t rtxrt::tokensPerStep(const std::vector<ArgSpec> &args,
                             const MeshLayout &mesh, const std::string &name) {
  for (const ArgSpec &arg : args)
    if (arg.kind == ArgSpec::Input && arg.name == name)
      return numElements(
          localBlock(arg.sharding, arg.shape, mesh, 0).globalShape);
  return 0;
}

double rtxrt::tokensPerSecond(int64_t tokensPerStep, double ms) {
  return tokensPerStep > 0 && ms > 0 ? tokensPerStep * 1000.0 / ms
                                     : std::nan("");
}

