//===- Random.cpp - counter-based random numbers --------------------------===//
//
// Philox-4x32-10 as specified by Random123 (constants and round structure of
// philox.h), and the mapping from (seed, tensor name, element index) to
// uniform and normal values. This mapping is part of rtx's deterministic
// mode: the CUDA kernels and any future backend must implement exactly the
// same functions, so every step is spelled out here:
//
//   key      = randomKey(seed, name)            (64 bits, split lo/hi)
//   counter  = {lo32(index), hi32(index), 0, 0}
//   uniform  = (philox[0] >> 8) * 2^-24                 in [0, 1)
//   normal   = sqrt(-2 ln u1) * cos(2 pi u2) with
//              u1 = (top 53 bits of philox[0..1] + 1) * 2^-53   in (0, 1]
//              u2 =  top 53 bits of philox[2..3]      * 2^-53   in [0, 1)
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/Random.h"
#include "rtxrt/core/detail/Philox.h"

#include <cmath>

using namespace rtxrt;

namespace {
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline std::array<uint32_t, 4> philoxAt(uint64_t key, uint64_t index) {
  detail::PhiloxBlock r = detail::philoxAt(key, index);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}
} // namespace

std::array<uint32_t, 4> rtxrt::philox4x32(std::array<uint32_t, 4> counter,
                                          std::array<uint32_t, 2> key) {
  detail::PhiloxBlock r = detail::philox4x32x10(
      {{counter[0], counter[1], counter[2], counter[3]}}, key[0], key[1]);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

uint64_t rtxrt::randomKey(int64_t seed, const std::string &name) {
  // FNV-1a (64-bit) of the name's bytes.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  // splitmix64 scrambles the seed so that seeds 0, 1, 2, ... give unrelated
  // keys, and the final mix spreads the name's hash over all 64 bits.
  return splitmix64(hash ^ splitmix64(static_cast<uint64_t>(seed)));
}

double rtxrt::uniformAt(uint64_t key, uint64_t index) {
  return detail::philoxUniform(key, index);
}

double rtxrt::normalAt(uint64_t key, uint64_t index) {
  std::array<uint32_t, 4> r = philoxAt(key, index);
  uint64_t a = ((static_cast<uint64_t>(r[0]) << 32) | r[1]) >> 11;
  uint64_t b = ((static_cast<uint64_t>(r[2]) << 32) | r[3]) >> 11;
  double u1 = static_cast<double>(a + 1) * 0x1.0p-53; // (0, 1]: log is finite
  double u2 = static_cast<double>(b) * 0x1.0p-53;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}
