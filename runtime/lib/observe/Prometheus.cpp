//===- Prometheus.cpp - a rank's metrics for Prometheus -------------------===//

#include "Prometheus.h"

#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::program;

double rtxrt::program::allReducePercent(const StepFigures &f) {
  return f.ms > 0 ? 100.0 * f.comm.exposedAllReduceSeconds * 1000.0 / f.ms
                  : std::nan("");
}

double rtxrt::program::overlapPercent(const CommunicationStats &comm) {
  if (!(comm.busySeconds > 0))
    return std::nan("");
  double hidden = std::max(0.0, comm.busySeconds - comm.exposedSeconds);
  return 100.0 * std::min(hidden, comm.busySeconds) / comm.busySeconds;
}

double rtxrt::program::busBandwidthGBps(const CommunicationStats &comm) {
  return comm.busySeconds > 0 ? comm.busBytes / comm.busySeconds / 1e9
                              : std::nan("");
}

RunMetrics::RunMetrics(MetricLabels labels) : labels_(std::move(labels)) {}

void RunMetrics::step(const StepFigures &figures) {
  std::lock_guard<std::mutex> lock(mutex_);
  recentMs_.push_back(figures.ms);
  if (recentMs_.size() > kWindow)
    recentMs_.pop_front();
  sumMs_ += figures.ms;
  ++count_;
  last_ = figures;
  busySeconds_ += figures.comm.busySeconds;
  exposedSeconds_ += figures.comm.exposedSeconds;
}

/// Nearest-rank quantile of `values` (sorted here).
static double quantile(std::vector<double> values, double q) {
  if (values.empty())
    return std::nan("");
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(q * double(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double RunMetrics::stepTimeQuantile(double q) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return quantile({recentMs_.begin(), recentMs_.end()}, q);
}

/// A sample value as the text format writes it (NaN, +Inf, -Inf).
static std::string value(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// A label value, escaped as the text format requires.
static std::string labelValue(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void RunMetrics::evaluation(int64_t globalStep, double loss) {
  std::lock_guard<std::mutex> lock(mutex_);
  lastEval_ = std::make_pair(globalStep, loss);
}

std::string RunMetrics::exposition() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string labels = "rank=\"" + std::to_string(labels_.rank) + "\",mesh=\"" +
                       labelValue(labels_.mesh) + "\",run=\"" +
                       labelValue(labels_.run) + "\"";
  std::string out;
  auto family = [&](const char *name, const char *type, const char *help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name +
           " " + type + "\n";
  };
  auto sample = [&](const std::string &name, const std::string &extra,
                    double v) {
    out += name + "{" + labels + extra + "} " + value(v) + "\n";
  };
  family("step_time_ms", "summary",
         "Time of a training step in milliseconds (quantiles over the last "
         "1024 steps).");
  std::vector<double> recent(recentMs_.begin(), recentMs_.end());
  for (double q : {0.5, 0.95, 0.99}) {
    char extra[32];
    std::snprintf(extra, sizeof extra, ",quantile=\"%g\"", q);
    sample("step_time_ms", extra, quantile(recent, q));
  }
  sample("step_time_ms_sum", "", sumMs_);
  sample("step_time_ms_count", "", double(count_));
  family("loss", "gauge",
         "Training loss of the last step (NaN on ranks that do not compute "
         "it, such as pipeline stages before the last).");
  sample("loss", "", count_ ? last_.loss : std::nan(""));
  family("lr", "gauge",
         "The optimizer's learning rate of the last step (its schedule "
         "compiled into the step; NaN where the program does not know it).");
  sample("lr", "", count_ ? last_.lr : std::nan(""));
  family("tokens_per_s", "gauge", "Tokens per second of the last step.");
  sample("tokens_per_s", "", count_ ? last_.tokensPerSecond : std::nan(""));
  family("allreduce_pct", "gauge",
         "Share of the last step's time spent waiting in all-reduces, in "
         "percent.");
  sample("allreduce_pct", "", count_ ? allReducePercent(last_) : std::nan(""));
  family("collective_pct", "gauge",
         "Share of the last step's time spent waiting in any communication, "
         "in percent.");
  sample("collective_pct", "",
         count_ && last_.ms > 0
             ? 100.0 * last_.comm.exposedSeconds * 1000.0 / last_.ms
             : std::nan(""));
  family("overlap_pct", "gauge",
         "Share of the communication time of the run hidden under compute, "
         "in percent (NaN before any communication).");
  CommunicationStats total;
  total.busySeconds = busySeconds_;
  total.exposedSeconds = exposedSeconds_;
  sample("overlap_pct", "", overlapPercent(total));
  family("net_bw_gbps", "gauge",
         "Achieved bus bandwidth of the last step's collectives in GB/s "
         "(nccl-tests' busbw).");
  sample("net_bw_gbps", "",
         count_ ? busBandwidthGBps(last_.comm) : std::nan(""));
  struct Device {
    const char *name;
    const AllocatorStats *stats;
  };
  if (lastEval_) {
    family("eval_loss", "gauge",
           "Loss on the held-out batches (--eval-data) at the last "
           "evaluation.");
    sample("eval_loss", "", lastEval_->second);
    family("eval_step", "gauge",
           "The step of the last held-out evaluation (steps done in all).");
    sample("eval_step", "", double(lastEval_->first));
  }
  std::vector<Device> devices = {{"host", &last_.host}};
  if (last_.device)
    devices.push_back({"gpu", &*last_.device});
  family("peak_bytes", "gauge", "The most bytes held by tensors at once.");
  for (const Device &d : devices)
    sample("peak_bytes", std::string(",device=\"") + d.name + "\"",
           double(d.stats->peakBytes));
  family("alloc_frag_pct", "gauge",
         "Share of the allocator's kept memory that no tensor uses, in "
         "percent.");
  for (const Device &d : devices)
    sample("alloc_frag_pct", std::string(",device=\"") + d.name + "\"",
           d.stats->fragmentationPercent());
  family("oom_count", "counter", "Allocations that failed (out of memory).");
  for (const Device &d : devices)
    sample("oom_count", std::string(",device=\"") + d.name + "\"",
           double(d.stats->failures));
  return out;
}

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsServer::MetricsServer(const RunMetrics &metrics, const std::string &host,
                             int port)
    : impl_(std::make_unique<Impl>()), port_(port) {
  // httplib's default also sets SO_REUSEPORT, with which a second program
  // on the same port would silently take half the scrapes: only
  // SO_REUSEADDR (a restart may bind while old connections linger).
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->server.Get("/metrics", [&metrics](const httplib::Request &,
                                           httplib::Response &response) {
    response.set_content(metrics.exposition(),
                         "text/plain; version=0.0.4; charset=utf-8");
  });
  if (port == 0)
    port_ = impl_->server.bind_to_any_port(host);
  else if (!impl_->server.bind_to_port(host, port))
    port_ = -1;
  if (port_ <= 0)
    throw Error("cannot serve metrics on " + host + ":" + std::to_string(port) +
                " (in use, or not allowed: choose "
                "another --metrics-port)");
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

void rtxrt::program::writeMetricsTextfile(const std::string &dir, int64_t rank,
                                          const std::string &text) {
  std::string path = dir + "/rtx_rank_" + std::to_string(rank) + ".prom";
  // node-exporter reads only *.prom: the temporary name is not one.
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  std::FILE *file = std::fopen(temporary.c_str(), "w");
  bool ok =
      file && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (file)
    ok = (std::fclose(file) == 0) && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("cannot write the metrics textfile " + path + ": " + why);
  }
}
