//===- Profile.h - the hardware profile that rtx-calibrate completes -*- C++
//-*-//
//
// A hardware profile (schema "rtx-hardware-profile/1") describes a device
// and its links from datasheets; the planner prices plans with it.
// rtx-calibrate adds what only measurement knows, as a "calibration" object,
// and overwrites the three device fields a datasheet gets wrong for the
// runtime's kernels (memory_bandwidth, op_overhead_s, vector_flops_per_s).
// Every other field is kept as it was: the planner's schema is the planner's.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_CALIBRATE_PROFILE_H
#define RTX_TOOLS_RTX_CALIBRATE_PROFILE_H

#include "CollectiveTiming.h"
#include "Compute.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace rtx::calibrate {

inline constexpr const char *kProfileSchema = "rtx-hardware-profile/1";

/// A profile that cannot be read or used; the message names the file and
/// the field.
class ProfileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Reads and checks the profile at `path`: a JSON object whose "schema" is
/// kProfileSchema and whose "device", when present, is an object.
nlohmann::json readProfile(const std::string &path);

/// What the machine says of itself.
struct HostInfo {
  std::string hostname, cpuModel;
  int64_t memoryBytes = 0;
  static HostInfo probe();
};

/// A minimal CPU profile for `world` ranks on this host, for a run without
/// --profile. Its datasheet numbers (peak_flops, memory_bandwidth, the
/// shared_memory link) are placeholders until fillDefaultProfile() replaces
/// them with what was measured.
nlohmann::json defaultProfile(const HostInfo &host, int64_t world);

/// Everything measured, with how it was measured.
struct Calibration {
  std::string date, host, backend = "gloo";
  int64_t threads = 1, world = 1;
  /// OMP_NUM_THREADS and OPENBLAS_NUM_THREADS as set (absent: unset).
  std::vector<std::pair<std::string, std::string>> threadEnvironment;
  bool quick = false;
  /// Seconds of work before each timed collective call.
  double collectiveComputeGapSeconds = 0;
  ComputeResult compute;
  std::vector<CollectiveFit> collectives;
};

/// The default profile's placeholders replaced by measurements: peak f32
/// flops is the best GEMM throughput (so matmul_efficiency is 1), and the
/// shared_memory link is send_recv's fit.
void fillDefaultProfile(nlohmann::json &profile, const Calibration &c);

/// `profile` with "calibration" set and device.memory_bandwidth,
/// device.op_overhead_s and device.vector_flops_per_s overwritten.
void applyCalibration(nlohmann::json &profile, const Calibration &c);

/// Writes `json` to `path` through a temporary file and a rename, so that a
/// failed run never leaves half a profile. Throws ProfileError.
void writeJsonFile(const std::string &path, const nlohmann::json &json);
/// Fails early (before minutes of measurement) when `path` cannot be
/// written. Throws ProfileError.
void checkWritable(const std::string &path);

/// The current UTC time, "2026-01-31T12:00:00Z".
std::string isoDateNow();

} // namespace rtx::calibrate

#endif // RTX_TOOLS_RTX_CALIBRATE_PROFILE_H
