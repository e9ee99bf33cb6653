//===- Faults.h - test-only fault switches ----------------------*- C++ -*-===//
//
// Switches that make a run slow on purpose, so that tests can check what
// the observability tools say about known cases (docs/testing.md lists
// them; nothing sets them but a test):
//
//   RTX_FAULT_COMM_DELAY_MS=MS   every collective of the communicator
//                                waits MS milliseconds first (a slow link)
//   RTX_FAULT_SLOW_RANK=R:MS     rank R computes MS milliseconds longer in
//                                every step (a straggler)
//   RTX_FAULT_OFFLOAD_DELAY_MS=MS  every read and write of the offload
//                                tier takes at least MS milliseconds (a
//                                slow disk: backpressure)
//   RTX_FAULT_HEAL_FLIP=1        in-job recovery: a healed rank flips a bit
//                                of the first piece of state it receives (a
//                                transfer corrupted without an error)
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_FAULTS_H
#define RTXRT_LIB_PROGRAM_FAULTS_H

#include <cstdint>

namespace rtxrt::program {

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

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_FAULTS_H
