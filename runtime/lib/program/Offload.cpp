//===- Offload.cpp - a run's offloaded state ------------------------------===//

#include "Offload.h"

#include "Faults.h"

#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

std::string rtxrt::program::offloadTierOf(const ProgramSpec &spec) {
  std::string tier;
  for (const ArgSpec &arg : spec.args) {
    if (arg.offload.empty())
      continue;
    if (!tier.empty() && tier != arg.offload)
      throw Error("the program offloads to both '" + tier + "' and '" +
                  arg.offload + "'; one run has one offload tier");
    tier = arg.offload;
  }
  return tier;
}

std::unique_ptr<OffloadStore>
rtxrt::program::openOffload(const ProgramSpec &spec, const Flags &flags,
                            int64_t rank) {
  std::string tier = offloadTierOf(spec);
  if (tier.empty()) {
    if (!flags.offloadDir.empty())
      throw Error("--offload-dir is for programs compiled with offload=nvme; "
                  "this one offloads nothing");
    return nullptr;
  }
  OffloadOptions options;
  if (tier == "nvme") {
    if (flags.offloadDir.empty())
      throw Error("the program keeps its optimizer state on an SSD "
                  "(offload=nvme): give it a folder with --offload-dir DIR");
    options.tier = OffloadTier::Files;
    options.directory = flags.offloadDir + "/rank-" + std::to_string(rank);
  } else if (!flags.offloadDir.empty()) {
    throw Error("--offload-dir is for programs compiled with offload=nvme; "
                "this one offloads to host memory (offload=cpu)");
  }
  // The step's own order needs this many; never fewer than two (double
  // buffering).
  options.maxInFlight = std::max<int64_t>(spec.offloadSlots, 2);
  options.throttleMs = Faults::get().offloadDelayMs;
  // Waiting longer for a slot than for a collective is a hang.
  options.stallSeconds = flags.timeout;
  options.log = [rank](const std::string &line) {
    std::fprintf(stderr, "rank %lld: %s\n", static_cast<long long>(rank),
                 line.c_str());
  };
  return OffloadStore::create(options);
}

int64_t rtxrt::program::offloadBoundBytes(const ProgramSpec &spec,
                                          const OffloadStore &store) {
  int64_t largest = 0;
  for (const ArgSpec &arg : spec.args)
    if (!arg.offload.empty())
      largest = std::max<int64_t>(largest, numElements(arg.shape) *
                                               dtypeSize(arg.dtype));
  int64_t staging = store.stats().direct ? (largest + 4095) / 4096 * 4096 : 0;
  return std::max<int64_t>(spec.offloadSlots, 2) * (largest + staging);
}

void rtxrt::program::readOffloaded(OffloadStore &store, const ProgramSpec &spec,
                                   std::vector<Tensor> &results) {
  store.flush();
  for (size_t i = 0; i < spec.results.size() && i < results.size(); ++i)
    if (!spec.results[i].offload.empty())
      results[i] = store.read(spec.results[i].state);
}
