//===- ClockSync.h - align the ranks' clocks at rendezvous ------*- C++ -*-===//
//
// Each rank's trace is in its own clock; rtx-launch puts them on one
// timeline with the offsets measured here. No library offers this over
// rtx's own process groups (NTP and PTP discipline the system clock, which
// a training program must not touch), so it is a few lines here.
//
// The method brackets a moment every rank sees: in an all-gather, no rank
// can finish before the last one has entered, and every rank entered before
// that moment E. So E lies within [enter, exit] of each rank, in each rank's
// clock; the offset to rank 0 is the difference of the midpoints, with an
// error of at most half the sum of the two brackets. Of several rounds, the
// tightest bracket wins.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_CLOCKSYNC_H
#define RTXRT_LIB_PROGRAM_CLOCKSYNC_H

#include "rtxrt/program/Program.h"
#include "rtxrt/observe/Trace.h"

namespace rtxrt::program {

/// Every rank of `world` calls it; returns this rank's offset to rank 0
/// (zero with error zero on rank 0 and in a run of one rank).
ClockOffset measureClockOffset(Communicator &comm,
                               const std::vector<int64_t> &world, int64_t rank,
                               int rounds = 8);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_CLOCKSYNC_H
