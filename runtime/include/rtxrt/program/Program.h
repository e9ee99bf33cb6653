//===- Program.h - the main of emitted training programs --------*- C++ -*-===//
//
// A program emitted by rtx-translate is a step function plus a description
// of its arguments and results (ProgramSpec); runProgram() does the rest:
// reads the rank from the launcher's handoff, rendezvouses and creates the
// process groups, initialises parameters exactly as rtx-run does (same
// counter-based generator and block offsets, rtxrt/program/Arguments.h),
// reads or draws the data, runs the steps with a progress line on rank 0,
// and writes the final results and state on request. Its parts live in
// runtime/lib/program/, one purpose each. This is the one header emitted
// programs include.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_PROGRAM_H
#define RTXRT_PROGRAM_PROGRAM_H

#include "rtxrt/program/ProgramSpec.h"

namespace rtxrt {

/// The program's main: parses the command line (--help lists it), runs, and
/// returns the exit status.
int runProgram(const ProgramSpec &spec, int argc, char **argv);

} // namespace rtxrt

#endif // RTXRT_PROGRAM_PROGRAM_H
