//===- Philox.h - Philox-4x32-10 for host and device code -------*- C++ -*-===//
//
// The generator behind rtxrt/core/Random.h, written once for both the host and
// the CUDA kernels (dropout draws its mask on the GPU), so the two cannot
// drift apart: deterministic mode promises the same mask on every device.
// See runtime/lib/Random.cpp for the mapping from (seed, name, index).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_DETAIL_PHILOX_H
#define RTXRT_DETAIL_PHILOX_H

#include "rtxrt/core/detail/HostDevice.h"

#include <cstdint>

namespace rtxrt {
namespace detail {

struct PhiloxBlock {
  uint32_t v[4];
};

/// Philox-4x32-10 (Random123's constants and round structure): the key is
/// bumped between rounds, not before the first.
RTXRT_HOST_DEVICE inline PhiloxBlock
philox4x32x10(PhiloxBlock counter, uint32_t key0, uint32_t key1) {
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  const uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u; // golden ratio, sqrt(3)-1
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += w0;
      key1 += w1;
    }
    uint64_t p0 = static_cast<uint64_t>(m0) * counter.v[0];
    uint64_t p1 = static_cast<uint64_t>(m1) * counter.v[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32),
             lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32),
             lo1 = static_cast<uint32_t>(p1);
    PhiloxBlock next = {
        {hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
    counter = next;
  }
  return counter;
}

/// The block for element `index` under a 64-bit key: counter {lo32(index),
/// hi32(index), 0, 0}, key {lo32(key), hi32(key)}.
RTXRT_HOST_DEVICE inline PhiloxBlock philoxAt(uint64_t key, uint64_t index) {
  PhiloxBlock counter = {{static_cast<uint32_t>(index),
                          static_cast<uint32_t>(index >> 32), 0u, 0u}};
  return philox4x32x10(counter, static_cast<uint32_t>(key),
                       static_cast<uint32_t>(key >> 32));
}

/// Uniform in [0, 1) with 24-bit resolution: (philox[0] >> 8) * 2^-24.
RTXRT_HOST_DEVICE inline double philoxUniform(uint64_t key, uint64_t index) {
  return static_cast<double>(philoxAt(key, index).v[0] >> 8) *
         (1.0 / 16777216.0);
}

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_DETAIL_PHILOX_H
