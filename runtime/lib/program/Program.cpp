//===- Program.cpp - the main of emitted training programs ----------------===//
//
// runProgram reads top to bottom as a run goes: what the run decides once
// (Run.h), the state it resumes (TrainState.h), its epochs (Epoch.h: one,
// unless in-job recovery meets again after a lost peer).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/program/Program.h"

#include "program/Epoch.h"

#include <csignal>
#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

int rtxrt::runProgram(const ProgramSpec &whole, int argc, char **argv) {
  // A write to a peer that died (Gloo's TCP pairs) must fail with EPIPE,
  // which the collective reports, not kill this rank with SIGPIPE: a
  // survivor of in-job recovery keeps its process.
  std::signal(SIGPIPE, SIG_IGN);
  Run run(whole);
  try {
    if (!run.start(argc, argv))
      return 0; // --help
    TrainState state(run);
    state.resume(run.flags.checkpoint);
    state.endAfterSteps();
    run.startProgress(state.untilStep);
    for (int64_t epoch = run.recovery.epoch;; ++epoch) {
      Epoch::Outcome outcome = Epoch(run, state, epoch).run();
      if (outcome.ended || !awaitNextEpoch(run, state, epoch, outcome.lost))
        return run.writeTrace() ? 0 : 1;
    }
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%serror: %s\n", run.who().c_str(), error.what());
    run.tracer.error(error.what());
    run.writeTrace();
    return 1;
  }
}
