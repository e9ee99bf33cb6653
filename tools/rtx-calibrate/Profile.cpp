//===- Profile.cpp - the hardware profile that rtx-calibrate completes ----===//

#include "Profile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace rtx::calibrate;
using nlohmann::json;

json rtx::calibrate::readProfile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw ProfileError(path +
                       ": cannot read the profile: " + std::strerror(errno));
  json profile;
  try {
    profile = json::parse(in);
  } catch (const json::exception &error) {
    throw ProfileError(path + ": not valid JSON: " + error.what());
  }
  if (!profile.is_object())
    throw ProfileError(
        path + ": a profile is a JSON object, got " +
        (profile.is_array() || profile.is_object() ? "an " : "a ") +
        profile.type_name());
  auto schema = profile.find("schema");
  if (schema == profile.end())
    throw ProfileError(path + ": field 'schema' is missing (expected \"" +
                       kProfileSchema + "\")");
  if (!schema->is_string() || *schema != kProfileSchema)
    throw ProfileError(path + ": field 'schema' is " + schema->dump() +
                       ", expected \"" + kProfileSchema + "\"");
  // The one field written into besides "calibration".
  if (auto device = profile.find("device");
      device != profile.end() && !device->is_object())
    throw ProfileError(path + ": field 'device' must be an object, got " +
                       device->dump());
  return profile;
}

HostInfo HostInfo::probe() {
  HostInfo host;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0)
    host.hostname = name;
  if (host.hostname.empty())
    host.hostname = "localhost";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      if (auto colon = line.find(':'); colon != std::string::npos)
        host.cpuModel = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  if (host.cpuModel.empty())
    host.cpuModel = "unknown CPU";
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    host.memoryBytes = static_cast<int64_t>(pages) * pageSize;
  return host;
}

json rtx::calibrate::defaultProfile(const HostInfo &host, int64_t world) {
  json intra = json::array();
  for (int64_t i = 0; i < world; ++i) {
    json row = json::array();
    for (int64_t j = 0; j < world; ++j)
      row.push_back(i == j ? "self" : "shared_memory");
    intra.push_back(row);
  }
  return json{
      {"schema", kProfileSchema},
      {"name", host.hostname},
      {"description",
       "CPU host " + host.hostname + " (" + host.cpuModel + ") with " +
           std::to_string(world) +
           " rank(s), written by rtx-calibrate without an input profile"},
      {"sources",
       {"rtx-calibrate: device.peak_flops.f32 is the best measured GEMM "
        "throughput, device.memory_bandwidth, op_overhead_s and "
        "vector_flops_per_s are measured, "
        "the shared_memory link is the measured send/recv (a placeholder, "
        "1e-5 s and 5e9 B/s, when run as one process)",
        "placeholder: the ethernet link (1e-4 s, 1.25e9 B/s: 10 Gb/s)"}},
      // Ranks of one host share its memory.
      {"device",
       {{"kind", "cpu"},
        {"model", host.cpuModel},
        {"memory_bytes", host.memoryBytes / std::max<int64_t>(world, 1)},
        {"peak_flops", {{"f32", 0.0}}},
        {"memory_bandwidth", 0.0},
        {"matmul_efficiency", 1.0},
        {"op_overhead_s", 0.0}}},
      {"devices_per_node", world},
      {"link_classes",
       {{"shared_memory", {{"alpha_s", 1e-5}, {"beta_bytes_per_s", 5e9}}},
        {"ethernet", {{"alpha_s", 1e-4}, {"beta_bytes_per_s", 1.25e9}}}}},
      {"intra_node", intra},
      {"inter_node", "ethernet"},
  };
}

void rtx::calibrate::fillDefaultProfile(json &profile, const Calibration &c) {
  double best = 0;
  for (const GemmResult &g : c.compute.gemm)
    best = std::max(best, g.flopsPerS);
  json &device = profile["device"];
  if (best > 0)
    device["peak_flops"]["f32"] = best;
  device["matmul_efficiency"] = 1.0;
  for (const CollectiveFit &fit : c.collectives)
    if (fit.op == "send_recv")
      profile["link_classes"]["shared_memory"] = {
          {"alpha_s", fit.fit.alphaS},
          {"beta_bytes_per_s", fit.fit.betaBytesPerS}};
}

void rtx::calibrate::applyCalibration(json &profile, const Calibration &c) {
  json matmul = json::array();
  for (const GemmResult &g : c.compute.gemm)
    matmul.push_back({{"m", g.shape.m},
                      {"n", g.shape.n},
                      {"k", g.shape.k},
                      {"transpose_lhs", g.transposedLhs},
                      {"dtype", "f32"},
                      {"flops_per_s", g.flopsPerS},
                      {"seconds", g.seconds}});
  json skipped = json::array();
  for (const GemmShape &s : c.compute.skipped)
    skipped.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}});

  json collectives = json::object();
  for (const CollectiveFit &fit : c.collectives) {
    json samples = json::array();
    for (const Sample &s : fit.samples)
      samples.push_back({static_cast<int64_t>(s.bytes), s.seconds});
    json entry = {{"ranks", fit.ranks},
                  {"concurrent_groups", fit.concurrentGroups},
                  {"alpha_s", fit.fit.alphaS},
                  {"beta_bytes_per_s", fit.fit.betaBytesPerS},
                  {"fit", fit.fit.method},
                  {"samples", samples}};
    if (!fit.fit.warning.empty())
      entry["warning"] = fit.fit.warning;
    if (!fit.skipped.empty())
      entry["skipped_bytes"] = fit.skipped;
    collectives[fit.op].push_back(entry);
  }

  json environment = json::object();
  for (const auto &[name, value] : c.threadEnvironment)
    environment[name] = value;

  json calibration = {{"tool", "rtx-calibrate"},
                      {"date", c.date},
                      {"host", c.host},
                      {"backend", c.backend},
                      {"threads", c.threads},
                      {"thread_environment", environment},
                      {"ranks", c.world},
                      {"quick", c.quick},
                      {"matmul", matmul},
                      {"elementwise_bandwidth", c.compute.elementwiseBandwidth},
                      {"op_overhead_s", c.compute.opOverheadS},
                      {"vector_flops_per_s", c.compute.vectorFlopsPerS},
                      {"collectives", collectives}};
  if (!skipped.empty())
    calibration["matmul_skipped"] = skipped;
  if (c.world > 1)
    calibration["collective_compute_gap_s"] = c.collectiveComputeGapSeconds;
  profile["calibration"] = calibration;
  json &device = profile["device"];
  device["memory_bandwidth"] = c.compute.elementwiseBandwidth;
  device["op_overhead_s"] = c.compute.opOverheadS;
  device["vector_flops_per_s"] = c.compute.vectorFlopsPerS;
}

void rtx::calibrate::checkWritable(const std::string &path) {
  std::string probe = path + ".tmp";
  std::FILE *file = std::fopen(probe.c_str(), "w");
  if (!file)
    throw ProfileError(path +
                       ": cannot write the output: " + std::strerror(errno));
  std::fclose(file);
  std::remove(probe.c_str());
}

void rtx::calibrate::writeJsonFile(const std::string &path, const json &j) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << j.dump(2) << '\n';
    out.flush();
    if (!out)
      throw ProfileError(path +
                         ": cannot write the output: " + std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temporary.c_str());
    throw ProfileError(path +
                       ": cannot write the output: " + std::strerror(error));
  }
}

std::string rtx::calibrate::isoDateNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}
