//===- Trace.cpp - per-rank traces in the Chrome trace event format -------===//

#include "rtxrt/observe/Trace.h"

#include "rtxrt/core/Tensor.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;

const char *rtxrt::traceLaneName(TraceLane lane) {
  switch (lane) {
  case TraceLane::Compute:
    return "compute";
  case TraceLane::Communication:
    return "communication";
  case TraceLane::Data:
    return "data";
  case TraceLane::Checkpoint:
    return "checkpoint";
  case TraceLane::Device:
    return "device";
  }
  return "unknown";
}

std::string rtxrt::jsonQuote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

void TraceOptions::parseSteps(const std::string &text, TraceOptions &options) {
  auto bad = [&]() {
    return Error("--trace-steps needs FIRST:LAST, FIRST:, :LAST or STEP "
                 "(steps of this run, from 1), got '" +
                 text + "'");
  };
  auto number = [&](const std::string &part) -> int64_t {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || errno == ERANGE || v < 1)
      throw bad();
    return v;
  };
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    options.firstStep = options.lastStep = number(text);
    return;
  }
  std::string first = text.substr(0, colon), last = text.substr(colon + 1);
  if (first.empty() && last.empty())
    throw bad();
  options.firstStep = first.empty() ? 1 : number(first);
  options.lastStep =
      last.empty() ? std::numeric_limits<int64_t>::max() : number(last);
  if (options.lastStep < options.firstStep)
    throw Error("--trace-steps " + text +
                ": the last step is before the first");
}

void Tracer::configure(const TraceOptions &options, int64_t rank,
                       int64_t world) {
  if (options.dir.empty())
    return;
  // The directory, with its parents, as `mkdir -p` (every rank tries; one
  // that exists is fine).
  for (size_t slash = options.dir.find('/', 1);;
       slash = options.dir.find('/', slash + 1)) {
    std::string prefix = options.dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      throw Error("cannot create the trace directory " + prefix + ": " +
                  std::strerror(errno));
    if (slash == std::string::npos)
      break;
  }
  // Refused now, not after the run: a file in the way, or no permission.
  struct stat info;
  if (::stat(options.dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
      ::access(options.dir.c_str(), W_OK) != 0)
    throw Error("the trace directory " + options.dir +
                " is not a directory this program can write to");
  options_ = options;
  rank_ = rank;
  world_ = world;
  enabled_ = true;
  active_ = true; // setup, until the first step decides
  events_.reserve(
      static_cast<size_t>(std::min<int64_t>(options.maxEvents, 1 << 16)));
}

void Tracer::beginStep(int64_t step) {
  if (!enabled_)
    return;
  step_ = step;
  active_ = step >= options_.firstStep && step <= options_.lastStep;
}

void Tracer::endStep() {
  if (!enabled_)
    return;
  step_ = 0;
  active_ = true; // what follows the steps (state writes) is traced
}

void Tracer::setRunInfo(std::string mesh, std::string runId) {
  mesh_ = std::move(mesh);
  runId_ = std::move(runId);
}

void Tracer::add(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int64_t>(events_.size()) >= options_.maxEvents) {
    ++dropped_;
    return;
  }
  event.step = step_;
  events_.push_back(std::move(event));
}

void Tracer::span(TraceLane lane, const char *name, const char *category,
                  int64_t startNs, int64_t endNs, std::string argsJson,
                  std::string ownedName) {
  if (!active())
    return;
  add(Event{lane, name, category, nullptr, startNs, endNs, 0,
            std::move(ownedName), std::move(argsJson)});
}

void Tracer::error(const std::string &message) {
  if (!enabled_)
    return;
  int64_t at = now();
  add(Event{TraceLane::Compute,
            "error",
            "error",
            nullptr,
            at,
            at,
            0,
            {},
            "\"message\": " + jsonQuote(message)});
}

void Tracer::opSpan(const OpInfo &op, int64_t startNs, int64_t endNs,
                    TraceLane lane) {
  if (!active())
    return;
  add(Event{lane, op.name, "op", &op, startNs, endNs, 0, {}, {}});
}

int64_t Tracer::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(events_.size());
}

/// Microseconds with nanosecond digits, as the format's "ts" and "dur".
static std::string micros(int64_t ns) {
  char text[40];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03d", ns / 1000,
                static_cast<int>(ns % 1000));
  return text;
}

static std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// The device's peaks given on the command line, for `rtx report`'s
/// roofline: `, "peak_flops": ...` (empty when none was given).
static std::string peaksJson(const TraceOptions &options) {
  std::string json;
  if (options.peakTflops > 0)
    json += ", \"peak_flops\": " + number(options.peakTflops * 1e12);
  if (options.peakGbps > 0)
    json += ", \"peak_bytes_per_s\": " + number(options.peakGbps * 1e9);
  if (!json.empty())
    json += ", \"peak_source\": \"the program's --peak-tflops/--peak-gbps\"";
  return json;
}

std::string Tracer::write() const {
  std::string path =
      options_.dir + "/rank-" + std::to_string(rank_) + ".trace.json";
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  std::FILE *file = std::fopen(temporary.c_str(), "w");
  if (!file)
    throw Error("cannot write the trace " + path + ": " + std::strerror(errno));
  std::lock_guard<std::mutex> lock(mutex_);
  std::string pid = std::to_string(rank_);
  std::fprintf(file, "{\"traceEvents\": [\n");
  // Metadata events: the viewer's names for the process and its lanes.
  std::fprintf(file,
               "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %s, "
               "\"tid\": 0, \"args\": {\"name\": \"rank %s\"}},\n"
               "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %s, "
               "\"tid\": 0, \"args\": {\"sort_index\": %s}}",
               pid.c_str(), pid.c_str(), pid.c_str(), pid.c_str());
  for (TraceLane lane :
       {TraceLane::Compute, TraceLane::Communication, TraceLane::Data,
        TraceLane::Checkpoint, TraceLane::Device})
    std::fprintf(file,
                 ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %s, "
                 "\"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                 pid.c_str(), static_cast<int>(lane), traceLaneName(lane));
  for (const Event &e : events_) {
    std::string name = e.ownedName.empty() ? e.name : e.ownedName;
    std::string args = "\"step\": " + std::to_string(e.step);
    if (e.op) {
      args += ", \"op\": " + jsonQuote(e.op->name) +
              ", \"location\": " + jsonQuote(e.op->location) +
              ", \"flops\": " + number(e.op->flops) +
              ", \"bytes\": " + number(e.op->bytes);
      if (e.op->kind)
        args += std::string(", \"kind\": ") + jsonQuote(e.op->kind);
    }
    if (!e.args.empty())
      args += ", " + e.args;
    std::fprintf(
        file,
        ",\n{\"name\": %s, \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %s, "
        "\"dur\": %s, \"pid\": %s, \"tid\": %d, \"args\": {%s}}",
        jsonQuote(name).c_str(), e.category, micros(e.startNs).c_str(),
        micros(std::max<int64_t>(e.endNs - e.startNs, 0)).c_str(), pid.c_str(),
        static_cast<int>(e.lane), args.c_str());
  }
  std::string steps = "[" + std::to_string(options_.firstStep) + ", " +
                      (options_.lastStep == std::numeric_limits<int64_t>::max()
                           ? std::string("null")
                           : std::to_string(options_.lastStep)) +
                      "]";
  std::fprintf(
      file,
      "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"rank\": %s, "
      "\"world\": %lld, \"mesh\": %s, \"run\": %s, \"clock\": "
      "\"CLOCK_MONOTONIC\", \"clock_offset_us\": %s, "
      "\"clock_offset_error_us\": %s, \"clock_sync_rounds\": %lld, "
      "\"traced_steps\": %s, \"max_events\": %lld, \"dropped_events\": "
      "%lld, \"op_clock\": %s%s}}\n",
      pid.c_str(), static_cast<long long>(world_), jsonQuote(mesh_).c_str(),
      jsonQuote(runId_).c_str(), number(clock_.offsetUs).c_str(),
      number(clock_.errorUs).c_str(), static_cast<long long>(clock_.rounds),
      steps.c_str(), static_cast<long long>(options_.maxEvents),
      static_cast<long long>(dropped_), jsonQuote(opClock_).c_str(),
      peaksJson(options_).c_str());
  bool ok = std::fflush(file) == 0 && !std::ferror(file);
  ok = (std::fclose(file) == 0) && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("cannot write the trace " + path + ": " + why);
  }
  return path;
}
