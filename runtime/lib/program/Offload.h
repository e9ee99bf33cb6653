//===- Offload.h - a run's offloaded state ----------------------*- C++ -*-===//
//
// rtx-shard-state{offload=cpu|nvme} leaves flat buffers of optimizer state
// (and stage 3's parameter shards) in an offload tier between steps. The run
// opens the tier (rtxrt/offload/OffloadStore.h), places each buffer's first value in
// it (the step then gets a reference), and at the end reads the final
// values back, so results and state files are the same as without offload.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_OFFLOAD_H
#define RTXRT_LIB_PROGRAM_OFFLOAD_H

#include "Flags.h"

#include "rtxrt/offload/OffloadStore.h"
#include "rtxrt/program/Program.h"

#include <memory>

namespace rtxrt::program {

/// The tier `spec`'s offloaded arguments name ("cpu", "nvme"), or "" when
/// it offloads nothing.
std::string offloadTierOf(const ProgramSpec &spec);

/// Whether any pipeline stage of `whole` (the whole program, every stage)
/// offloads state: every rank decides the same.
bool anyStageOffloads(const ProgramSpec &whole);

/// The buffers in flight the store allows: what the step's own order needs
/// (ProgramSpec::offloadSlots), never fewer than two (double buffering).
int64_t offloadSlotsOf(const ProgramSpec &spec);

/// The run's store (rtxrt::offloadOptionsFor: host memory or files in
/// --offload-dir/rank-R), bounded by the step's offloadSlots, its waits by
/// --timeout; null when the program offloads nothing.
std::unique_ptr<OffloadStore> openOffload(const ProgramSpec &spec,
                                          const Flags &flags, int64_t rank);

/// The most bytes `store` holds in flight for `spec`'s step: K slots, each
/// the largest offloaded buffer and (with O_DIRECT) its staging copy.
int64_t offloadBoundBytes(const ProgramSpec &spec, const OffloadStore &store);
/// offloadBoundBytes, said on rank 0 with the tier.
int64_t reportOffload(const ProgramSpec &spec, const OffloadStore &store,
                      int64_t rank);

/// The final value of every offloaded result, read from the store into its
/// place in `results` (which held references).
void readOffloaded(OffloadStore &store, const ProgramSpec &spec,
                   std::vector<Tensor> &results);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_OFFLOAD_H
