//===- HostTier.h - offloaded values in host memory -------------*- C++ -*-===//
//
// Each key's value in plain aligned host memory, which rtxrt's allocator
// does not count: it stands for memory outside the device. A worker thread
// makes fetch()'s and store()'s copies, so that they overlap the caller's
// work (as ZeRO-Offload's do).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_HOSTTIER_H
#define RTXRT_OFFLOAD_HOSTTIER_H

#include "Tier.h"
#include "WorkerThread.h"

namespace rtxrt::offload {

class HostTier final : public Tier {
public:
  explicit HostTier(Done done);

  void place(const std::string &key, Entry &e) override;
  int moveNow(Transfer &t) override;
  int start(Transfer &t) override;
  std::string where(const Entry &e) const override;

private:
  WorkerThread worker_;
};

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_HOSTTIER_H
