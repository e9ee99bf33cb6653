//===- Transfer.h - one key's record and one transfer of its bytes -*- C++ -*-//
//
// What the offload store and its tiers share: a key's Entry (what the store
// knows of it, plus the tier's Place) and a Transfer (one move of a key's
// whole value between a tensor and the tier). The store creates both and
// keeps them under its lock; a tier moves a Transfer's bytes, on the
// caller's thread or on a thread of its own.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OFFLOAD_TRANSFER_H
#define RTXRT_OFFLOAD_TRANSFER_H

#include "rtxrt/core/Tensor.h"

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>

namespace rtxrt::offload {

using Clock = std::chrono::steady_clock;

/// A transfer's error besides errno values: the file ended early.
constexpr int kShortFile = -1;

size_t roundUp(size_t n, size_t to);
std::string errnoText(int error);

struct FreeDeleter {
  void operator()(unsigned char *p) const { std::free(p); }
};
/// Plain aligned memory, invisible to rtxrt's allocator counters.
using AlignedBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

/// At least `bytes` (rounded up to `align`); throws Error naming `what`.
AlignedBuffer allocateAligned(size_t align, size_t bytes,
                              const std::string &what);

/// Where a tier keeps one key's value (host memory, a file). Each tier
/// derives its own and is the only one to look inside it.
struct Place {
  virtual ~Place();
};

/// One key. The store's map owns it, and its node does not move while a
/// Transfer points at it.
struct Entry {
  Shape shape;
  DType dtype = DType::F32;
  size_t bytes = 0;  // the value's
  size_t stored = 0; // what the tier holds (O_DIRECT files: rounded up)
  std::unique_ptr<Place> place;
  int reads = 0;        // reads in flight (a key may be fetched again)
  bool writing = false; // a write in flight
  std::string lost;     // why the tier holds no complete value, or ""
};

/// A transfer of a key's whole value.
struct Transfer {
  std::string key;
  Entry *entry = nullptr;
  bool write = false;
  int fd = -1;                   // the file tier's open file
  unsigned char *data = nullptr; // the tensor's buffer, or the staging
  size_t size = 0;               // bytes to move
  size_t done = 0;               // bytes moved
  Tensor tensor;         // read: the result; write: the value until written
  AlignedBuffer staging; // the tier's own buffer the bytes go through
  std::promise<Tensor> promise;
  Clock::time_point start;
};

} // namespace rtxrt::offload

#endif // RTXRT_OFFLOAD_TRANSFER_H
