//===- Tier.cpp - the offload store's tiers, chosen by their kind ---------===//

#include "Tier.h"

#include "FileTier.h"
#include "HostTier.h"

using namespace rtxrt;
using namespace rtxrt::offload;

Tier::~Tier() = default;
TransferThread::~TransferThread() = default;

std::unique_ptr<Tier> rtxrt::offload::makeTier(const OffloadOptions &options,
                                               Tier::Done done) {
  switch (options.tier) {
  case OffloadTier::Host:
    return std::make_unique<HostTier>(std::move(done));
  case OffloadTier::Files:
    return std::make_unique<FileTier>(options, std::move(done));
  }
  throw Error("offload: unknown tier " +
              std::to_string(static_cast<int>(options.tier)));
}
