//===- PipelineView.h - one rank's part of a pipelined program --*- C++ -*-===//
//
// A pipelined program (rtx-pipeline) has one step per pipeline coordinate.
// Each rank runs the program of its coordinate; the rest of runProgram sees
// only that, through a ProgramSpec of its own.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_PIPELINEVIEW_H
#define RTXRT_LIB_PROGRAM_PIPELINEVIEW_H

#include "rtxrt/program/Program.h"

namespace rtxrt::program {

/// `spec` itself when it is not pipelined; otherwise the view of `rank`'s
/// coordinate: its stage's args, results, loss and step, with the step's
/// results kept in stepResults. Throws for a mesh without the axis.
ProgramSpec pipelineView(const ProgramSpec &spec, int64_t rank);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_PIPELINEVIEW_H
