//===- CommunicationStats.h - what a step's communication did ---*- C++ -*-===//
//
// Counted by the step context, reported by the metrics and Prometheus.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_OBSERVE_COMMUNICATIONSTATS_H
#define RTXRT_OBSERVE_COMMUNICATIONSTATS_H

#include <cstdint>

namespace rtxrt {

/// What a step's communication did (the run's metrics,
/// docs/observability.md).
struct CommunicationStats {
  /// Time the step's thread waited for communication: synchronous
  /// collectives, and waits for started ones that had not finished.
  double exposedSeconds = 0;
  /// The part of it spent on all-reduces.
  double exposedAllReduceSeconds = 0;
  /// Time collectives ran: a synchronous one's whole time, a started one's
  /// time on the communication thread. busy - exposed is what overlapped.
  double busySeconds = 0;
  /// Bus bytes of the collectives that ran, nccl-tests' definition (an
  /// all-reduce of S bytes on n ranks: 2S(n-1)/n): over busySeconds, the
  /// achieved bus bandwidth.
  double busBytes = 0;
  int64_t collectives = 0;
  CommunicationStats &operator+=(const CommunicationStats &o);
};

} // namespace rtxrt

#endif // RTXRT_OBSERVE_COMMUNICATIONSTATS_H
