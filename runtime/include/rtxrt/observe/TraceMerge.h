//===- TraceMerge.h - the ranks' traces on one timeline ---------*- C++ -*-===//
//
// rtx-launch --trace DIR merges DIR/rank-R.trace.json (rtxrt/observe/Trace.h) into
// DIR/trace.json, one file that Perfetto and chrome://tracing open: every
// rank a process, each timestamp moved onto rank 0's clock by the offset the
// rank measured at rendezvous, and the timeline starting at 0. The offsets,
// their error bounds and the origin are stated in the file's "otherData".
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_TRACEMERGE_H
#define RTXRT_TRACEMERGE_H

#include <cstdint>
#include <string>
#include <vector>

namespace rtxrt {

struct MergedTrace {
  std::string path;
  std::vector<int64_t> ranks;   // the ranks found
  std::vector<int64_t> missing; // ranks of [0, world) without a file
  std::vector<int64_t> stale;   // files of another run, left out
  int64_t events = 0;
};

/// Merges the rank traces in `dir`; `world` (0: unknown) names the ranks
/// expected, and `run` (empty: any) the run whose files count: a file that
/// an earlier run left there is reported, not merged. Throws Error when
/// there is none, or one is not a trace.
MergedTrace mergeRankTraces(const std::string &dir, int64_t world,
                            const std::string &run = "");

} // namespace rtxrt

#endif // RTXRT_TRACEMERGE_H
