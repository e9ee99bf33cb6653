//===- TraceMerge.cpp - the ranks' traces on one timeline -----------------===//

#include "rtxrt/observe/TraceMerge.h"

#include "rtxrt/core/Tensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include <dirent.h>
#include <unistd.h>

using namespace rtxrt;
using json = nlohmann::json;

/// The ranks R of DIR/rank-R.trace.json.
static std::vector<int64_t> rankFiles(const std::string &dir) {
  std::vector<int64_t> ranks;
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    throw Error("cannot read the trace directory " + dir + ": " +
                std::strerror(errno));
  while (dirent *entry = ::readdir(d)) {
    std::string name = entry->d_name;
    const std::string prefix = "rank-", suffix = ".trace.json";
    if (name.size() <= prefix.size() + suffix.size() ||
        name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    ranks.push_back(std::stoll(digits));
  }
  ::closedir(d);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

/// One rank's trace file, checked to hold a traceEvents array.
static json readRankTrace(const std::string &path) {
  std::ifstream in(path);
  json trace;
  try {
    in >> trace;
  } catch (const json::exception &error) {
    throw Error(path + " is not a JSON trace: " + error.what());
  }
  if (!trace.is_object() || !trace.contains("traceEvents") ||
      !trace["traceEvents"].is_array())
    throw Error(path + " has no traceEvents array");
  return trace;
}

/// Writes `value` to `path` aside and renames it into place, so that a
/// reader never sees half a trace.
static void writeAtomically(const std::string &path, const json &value) {
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream file(temporary);
    file << value.dump() << "\n";
    file.flush();
    if (!file) {
      std::remove(temporary.c_str());
      throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("cannot write " + path + ": " + why);
  }
}

MergedTrace rtxrt::mergeRankTraces(const std::string &dir, int64_t world,
                                   const std::string &run) {
  MergedTrace merged;
  std::vector<int64_t> found = rankFiles(dir);
  for (int64_t rank : found)
    if (world <= 0 || rank < world) // an earlier, larger run's are not ours
      merged.ranks.push_back(rank);
  if (merged.ranks.empty())
    throw Error("no rank traces (rank-R.trace.json) in " + dir);

  json events = json::array();
  json offsets = json::object(), errors = json::object(),
       dropped = json::object();
  double origin = std::numeric_limits<double>::infinity();
  json first;
  for (int64_t rank : merged.ranks) {
    std::string path = dir + "/rank-" + std::to_string(rank) + ".trace.json";
    json trace = readRankTrace(path);
    const json &other = trace.value("otherData", json::object());
    // A file an earlier run left (a rank of this run failed before it wrote
    // its own) is not merged as if it were this run's.
    if (!run.empty() && other.value("run", "") != run) {
      merged.stale.push_back(rank);
      continue;
    }
    double offset = other.value("clock_offset_us", 0.0);
    std::string key = std::to_string(rank);
    offsets[key] = offset;
    errors[key] = other.value("clock_offset_error_us", 0.0);
    dropped[key] = other.value("dropped_events", 0);
    if (first.is_null())
      first = other;
    for (json &event : trace["traceEvents"]) {
      if (event.contains("ts")) {
        double ts = event["ts"].get<double>() - offset; // onto rank 0's clock
        event["ts"] = ts;
        origin = std::min(origin, ts);
      }
      events.push_back(std::move(event));
    }
  }
  for (int64_t stale : merged.stale)
    merged.ranks.erase(
        std::find(merged.ranks.begin(), merged.ranks.end(), stale));
  if (merged.ranks.empty())
    throw Error("the rank traces in " + dir + " are all from other runs than " +
                run);
  for (int64_t r = 0; r < world; ++r)
    if (!std::binary_search(merged.ranks.begin(), merged.ranks.end(), r))
      merged.missing.push_back(r);
  if (!std::isfinite(origin))
    origin = 0;
  for (json &event : events)
    if (event.contains("ts"))
      event["ts"] = event["ts"].get<double>() - origin;
  merged.events = static_cast<int64_t>(events.size());

  json out;
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ms";
  json other;
  other["ranks"] = merged.ranks;
  other["missing_ranks"] = merged.missing;
  other["world"] = world;
  other["mesh"] = first.value("mesh", "");
  other["run"] = first.value("run", "");
  other["clock"] = first.value("clock", "");
  // How the ops were timed and the device's peaks (rtx report's roofline):
  // alike on every rank of one program.
  for (const char *key :
       {"op_clock", "peak_flops", "peak_bytes_per_s", "peak_source"})
    if (first.contains(key))
      other[key] = first[key];
  other["clock_offsets_us"] = offsets;
  other["clock_offset_errors_us"] = errors;
  other["clock_alignment"] =
      "each rank's timestamps minus its offset to rank 0, measured at "
      "rendezvous by bracketing all-gathers (the error is a bound)";
  other["time_origin_us"] = origin;
  other["dropped_events"] = dropped;
  out["otherData"] = other;

  merged.path = dir + "/trace.json";
  writeAtomically(merged.path, out);
  return merged;
}
