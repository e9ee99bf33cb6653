//===- Faults.h - test-only fault switches ----------------------*- C++ -*-===//
//
// The switches that make a run slow or corrupt on purpose, as the program
// parts read them: once, when first asked. Each is a row of the one table of
// fault switches (rtxrt/core/FaultSwitches.h, docs/testing.md), where its
// value and meaning are declared.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_FAULTS_H
#define RTXRT_LIB_PROGRAM_FAULTS_H

#include <cstdint>

namespace rtxrt {

struct Faults {
  double commDelayMs = 0;
  int64_t slowRank = -1;
  double slowRankMs = 0;
  double offloadDelayMs = 0;
  bool healFlip = false;
  /// Read from the environment once; throws Error naming a malformed
  /// variable.
  static const Faults &get();
};

/// Sleeps for `ms` milliseconds (nothing when ms <= 0).
void sleepMs(double ms);

} // namespace rtxrt

#endif // RTXRT_LIB_PROGRAM_FAULTS_H
