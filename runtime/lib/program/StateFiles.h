//===- StateFiles.h - results and state written at the end -----*- C++ -*-===//
//
// --out DIR (every result, by index) and --save-state DIR (the results that
// carry state, by key, plus the number of steps done), reassembled to global
// shapes on rank 0; --state DIR reads them back (rtxrt/program/Arguments.h loads the
// tensors). Checkpoints during a run belong here.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_STATEFILES_H
#define RTXRT_LIB_PROGRAM_STATEFILES_H

#include "Groups.h"

#include <string>
#include <vector>

namespace rtxrt::program {

/// The steps that the runs behind a --save-state directory have done.
int64_t readStepsDone(const std::string &stateDir);

/// Writes the final `results` into `outDir` (resultN.npy) and their state
/// into `stateDir` (KEY.npy, then steps_done = `stepsDone` last, so that a
/// directory with it holds a whole state); either may be empty. Every rank
/// calls it; rank 0 writes.
void writeResults(const ProgramSpec &spec, ProcessGroups &groups,
                  const std::vector<Tensor> &results, const std::string &outDir,
                  const std::string &stateDir, int64_t stepsDone);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_STATEFILES_H
