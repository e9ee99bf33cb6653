//===- Transfer.cpp - helpers of the offload store's transfers ------------===//

#include "Transfer.h"

#include <algorithm>
#include <system_error>

using namespace rtxrt;
using namespace rtxrt::offload;

size_t rtxrt::offload::roundUp(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

std::string rtxrt::offload::errnoText(int error) {
  return std::generic_category().message(error);
}

AlignedBuffer rtxrt::offload::allocateAligned(size_t align, size_t bytes,
                                              const std::string &what) {
  void *p =
      std::aligned_alloc(align, roundUp(std::max<size_t>(bytes, 1), align));
  if (!p)
    throw Error("offload: cannot allocate " + std::to_string(bytes) +
                " bytes for " + what);
  return AlignedBuffer(static_cast<unsigned char *>(p));
}

Place::~Place() = default;
