//===- Random.h - counter-based random numbers ------------------*- C++ -*-===//
//
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a value is a pure function of (key, counter), so element i of a
// tensor can be drawn without drawing elements 0..i-1. rtx keys it by
// (seed, tensor name) and counts by global element index, so a parameter's
// values and a dropout mask do not depend on how a tensor is sharded.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_RANDOM_H
#define RTXRT_RANDOM_H

#include <array>
#include <cstdint>
#include <string>

namespace rtxrt {

/// Philox-4x32-10 of a 128-bit counter under a 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

/// The 64-bit key for (seed, name): FNV-1a of the name mixed with the seed.
uint64_t randomKey(int64_t seed, const std::string &name);

/// Uniform in [0, 1) for element `index` under `key` (24-bit resolution).
double uniformAt(uint64_t key, uint64_t index);
/// Standard normal for element `index` under `key` (Box-Muller on the two
/// halves of one Philox output).
double normalAt(uint64_t key, uint64_t index);

} // namespace rtxrt

#endif // RTXRT_RANDOM_H
