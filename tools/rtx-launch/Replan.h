//===- Replan.h - the program for another world size, planned -----*- C++
//-*-===//
//
// rtx-launch --replan MODEL.mlir: when a restart changes the number of ranks
// (--min-ranks shrinks, --grow-after grows), the program for the new world
// is planned by part 6's planner and compiled, or taken from the cache:
//   rtx-opt MODEL '-rtx-auto-partition=profile=P devices=W'
//           '-rtx-distribute=from-plan=true OPTIONS'
//   rtx-translate ... --build-script build.sh && sh build.sh
// into CACHE/world-W/program. The checkpoint restores on any mesh, so the
// planned program resumes the run whatever plan it chose.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_LAUNCH_REPLAN_H
#define RTX_TOOLS_RTX_LAUNCH_REPLAN_H

#include <string>

namespace rtxlaunch {

struct ReplanOptions {
  std::string model;                ///< --replan MODEL.mlir; empty: none
  std::string profile = "cpu-host"; ///< --replan-profile P
  std::string distribute;           ///< --replan-options 'lr=0.01 ...'
  std::string cache;                ///< --replan-cache DIR
};

/// The program for `world` ranks: CACHE/world-W/program, planned and built
/// when it is not there yet (what the planner chose is printed). Throws
/// rtxrt::Error naming the step that failed, with the end of its output.
std::string programForWorld(const ReplanOptions &options, int world);

} // namespace rtxlaunch

#endif // RTX_TOOLS_RTX_LAUNCH_REPLAN_H
