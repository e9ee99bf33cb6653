//===- Offload.cpp - a run's offloaded state ------------------------------===//

#include "Offload.h"

#include "core/Faults.h"

#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

std::string rtxrt::program::offloadTierOf(const ProgramSpec &spec) {
  for (const ArgSpec &arg : spec.args)
    if (!arg.offload.empty())
      return arg.offload;
  return "";
}

bool rtxrt::program::anyStageOffloads(const ProgramSpec &whole) {
  if (!offloadTierOf(whole).empty())
    return true;
  for (const PipelineStage &stage : whole.stages)
    for (const ArgSpec &arg : stage.args)
      if (!arg.offload.empty())
        return true;
  return false;
}

int64_t rtxrt::program::offloadSlotsOf(const ProgramSpec &spec) {
  return std::max<int64_t>(spec.offloadSlots, 2);
}

std::unique_ptr<OffloadStore>
rtxrt::program::openOffload(const ProgramSpec &spec, const Flags &flags,
                            int64_t rank) {
  std::optional<OffloadOptions> options =
      offloadOptionsFor(spec.args, flags.offloadDir, rank);
  if (!options)
    return nullptr;
  options->maxInFlight = offloadSlotsOf(spec);
  options->throttleMs = Faults::get().offloadDelayMs;
  // Waiting longer for a slot than for a collective is a hang.
  options->stallSeconds = flags.timeout;
  options->log = [rank](const std::string &line) {
    std::fprintf(stderr, "rank %lld: %s\n", static_cast<long long>(rank),
                 line.c_str());
  };
  return OffloadStore::create(*options);
}

int64_t rtxrt::program::offloadBoundBytes(const ProgramSpec &spec,
                                          const OffloadStore &store) {
  int64_t largest = 0;
  for (const ArgSpec &arg : spec.args)
    if (!arg.offload.empty())
      largest = std::max<int64_t>(largest, numElements(arg.shape) *
                                               dtypeSize(arg.dtype));
  int64_t staging = store.stats().direct ? (largest + 4095) / 4096 * 4096 : 0;
  return offloadSlotsOf(spec) * (largest + staging);
}

void rtxrt::program::readOffloaded(OffloadStore &store, const ProgramSpec &spec,
                                   std::vector<Tensor> &results) {
  store.flush();
  for (size_t i = 0; i < spec.results.size() && i < results.size(); ++i)
    if (!spec.results[i].offload.empty())
      results[i] = store.read(spec.results[i].state);
}

int64_t rtxrt::program::reportOffload(const ProgramSpec &spec,
                                      const OffloadStore &store,
                                      int64_t rank) {
  int64_t bound = offloadBoundBytes(spec, store);
  if (rank == 0)
    std::printf("offload: %s, at most %lld buffers (%lld bytes) in flight "
                "per rank\n",
                offloadTierOf(spec) == "nvme" ? "state in files (nvme)"
                                              : "state in host memory",
                static_cast<long long>(offloadSlotsOf(spec)),
                static_cast<long long>(bound));
  return bound;
}
