//===- Epoch.cpp - one rendezvous of the ranks, and its steps -------------===//

#include "Epoch.h"

#include "EpochCheckpoints.h"
#include "Offload.h"
#include "StateFiles.h"
#include "StepLoop.h"

#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

Epoch::Epoch(Run &run, TrainState &state, int64_t number)
    : run_(run), state_(state), number_(number),
      groups_(run.spec, run.self, *run.device, run.rendezvous(number),
              run.timeout->rendezvous(), run.timeout->shortest()) {
  run.timeout->start([this](double seconds) {
    groups_.communicator().setTimeout(seconds);
  });
  // Every rank measures its clock against rank 0's (a few tiny
  // all-gathers), so that traces of any subset of ranks line up.
  run.tracer.setClockOffset(groups_.measureClockOffset());
}

Epoch::Outcome Epoch::run() {
  settleState();
  return runSteps();
}

void Epoch::settleState() {
  // Every rank of the first epoch resumed (a replacement that joins
  // survivors takes their state, or reads again with them in heal()).
  if (number_ == 0 && run_.flags.checkpoint.resume)
    state_.agreeOnResume(groups_, run_.flags.checkpoint);
  if (run_.recovery.inJob)
    heal();
}

void Epoch::heal() {
  const Placement &self = run_.self;
  // The replacements take the survivors' state (or every rank the newest
  // checkpoint's) and the survivors' end.
  Healing healed = healFromPeers(run_.whole, run_.spec, groups_, *run_.device,
                                 state_.args, state_.stepsDone);
  // Offloaded state is written back into its tier during the step, so the
  // step that failed may have left part of its new values there: after a
  // loss every rank reads the newest checkpoint. (Offloaded buffers are
  // ZeRO flat buffers, of which no peer holds a replica: healFromPeers sent
  // none of them.)
  bool tornTiers = number_ > 0 && anyStageOffloads(run_.whole);
  if (tornTiers)
    healed.why = "the offloaded state may hold part of the step that failed";
  healed.needsCheckpoint = healed.needsCheckpoint || tornTiers;
  state_.untilStep = groups_.exchangeFlags(
      state_.untilStep, "the step the run ends after")[healed.leader];
  if (healed.needsCheckpoint) {
    CheckpointFlags resume = run_.flags.checkpoint;
    resume.resume = !resume.dir.empty();
    if (self.rank == 0)
      std::printf("recover: %s: every rank %s\n", healed.why.c_str(),
                  resume.resume ? "reads the newest checkpoint"
                                : "starts again from where the run started "
                                  "(no --checkpoint)");
    state_.resume(resume);
    if (resume.resume)
      state_.agreeOnResume(groups_, resume);
  } else {
    if (healed.received > 0)
      std::printf("recover: rank %lld received %lld pieces of state (step "
                  "%lld) from rank %lld\n",
                  static_cast<long long>(self.rank),
                  static_cast<long long>(healed.received),
                  static_cast<long long>(healed.stepsDone),
                  static_cast<long long>(healed.source));
    state_.stepsDone = healed.stepsDone;
    if (number_ > 0 && run_.flags.checkpoint.deterministic)
      checkHealedHash(groups_, healed, state_.hashedStep, state_.hashedState,
                      [this] { return state_.hash(groups_, state_.args); });
  }
  // rtx-launch: a failure after this is recovered in the job; one before
  // it (a replacement lost at the rendezvous) restarts all.
  if (number_ > 0)
    run_.board->joined(number_, self.rank);
  if (number_ > 0 && self.rank == 0)
    std::printf("recover: epoch %lld: %lld ranks, resuming after step %lld\n",
                static_cast<long long>(number_),
                static_cast<long long>(self.world),
                static_cast<long long>(state_.stepsDone));
  std::fflush(stdout);
}

Epoch::Outcome Epoch::runSteps() {
  const Flags &flags = run_.flags;
  std::string planChange;
  if (!flags.checkpoint.dir.empty()) {
    state_.measureLayout(groups_);
    planChange = state_.planChange();
  }
  int64_t steps = state_.untilStep - state_.stepsDone;
  if (steps <= 0 && number_ == run_.recovery.epoch) {
    if (run_.self.rank == 0)
      std::printf("done: %lld steps were done before, --until-step %lld asks "
                  "for no more\n",
                  static_cast<long long>(state_.stepsDone),
                  static_cast<long long>(state_.untilStep));
    return Outcome{true, ""};
  }
  StepContext context(run_.self.rank, run_.spec.mesh, groups_.communicator(),
                      run_.spec.device);
  if (run_.tracer.enabled())
    context.setTracer(&run_.tracer);
  context.setOffload(state_.offload.get());
  StepLoop loop{run_.spec, context, groups_, *run_.device, *run_.progress,
                run_.data ? &*run_.data : nullptr};
  if (state_.offload)
    loop.offloadBoundBytes = reportOffload(run_.spec, *state_.offload,
                                           run_.self.rank);
  std::optional<EpochCheckpoints> checkpoints;
  if (!flags.checkpoint.dir.empty()) {
    checkpoints.emplace(run_, state_, groups_, planChange);
    loop.afterStep = [&checkpoints](int64_t stepsDone,
                                    const std::vector<Tensor> &state) {
      return checkpoints->afterStep(stepsDone, state);
    };
  }
  if (run_.evalData) {
    loop.evalData = &*run_.evalData;
    loop.eval = flags.eval;
    // In-job recovery: a peer lost during the evaluation of the step the
    // ranks resume after leaves it without its line. Rank 0, which writes
    // the lines, says whether it has one (a replacement has none), so every
    // rank decides alike.
    if (number_ > 0)
      loop.evaluateFirst =
          groups_.exchangeFlags(run_.progress->lastEvalStep(),
                                "the step of the last held-out evaluation")[0] <
          state_.stepsDone;
  }
  loop.timeout = &*run_.timeout;
  loop.runnerOptions =
      stepRunnerOptions(run_.spec, flags.noStepArena, flags.noCudaGraph,
                        run_.self.rank, run_.self.world, run_.tracer.enabled());
  std::vector<Tensor> results;
  try {
    results = loop.run(state_.args, state_.stepsDone, steps);
  } catch (const CommunicationError &error) {
    if (!run_.recovery.inJob)
      throw;
    // The state of the steps that every piece of it finished: a step is
    // functional, its results replace `args` only when it ends.
    state_.stepsDone += loop.stepsRun;
    run_.tracer.error(error.what()); // when it was found, before teardown
    return Outcome{false, error.what()};
  }
  int64_t stepsDone = state_.stepsDone + loop.stepsRun;
  // The last checkpoint and the results wait for the slowest rank's
  // writes, which are no step.
  run_.timeout->relax();
  if (checkpoints)
    checkpoints->finish(stepsDone);
  finishRun(results, stepsDone, checkpoints && checkpoints->preempted());
  return Outcome{true, ""};
}

void Epoch::finishRun(std::vector<Tensor> &results, int64_t stepsDone,
                      bool preempted) {
  if (preempted && run_.self.rank == 0)
    std::printf("pre-empted: stopped after step %lld, its checkpoint is "
                "committed in %s\n",
                static_cast<long long>(stepsDone),
                run_.flags.checkpoint.dir.c_str());
  run_.progress->done();
  state_.materialize(results);
  // The final results and state, reassembled on rank 0.
  const Flags &flags = run_.flags;
  bool writes = !flags.out.empty() || !flags.saveState.empty();
  TraceScope write(writes ? &run_.tracer : nullptr, TraceLane::Checkpoint,
                   "write results and state", "checkpoint");
  writeResults(run_.spec, groups_, results, flags.out, flags.saveState,
               stepsDone);
}

/// The survivors' save for a smaller world, said by the survivor that
/// speaks for them.
static void sayShrinkSave(const ShrinkSave &save, const std::string &dir) {
  if (save.speaks && save.committed)
    std::printf("shrink: the survivors' state of step %lld is committed in "
                "%s%s%s%s\n",
                static_cast<long long>(save.step), dir.c_str(),
                save.why.empty() ? "" : " (", save.why.c_str(),
                save.why.empty() ? "" : ")");
  else if (save.speaks)
    std::printf("shrink: the survivors saved nothing of step %lld (%s): the "
                "smaller world resumes from the newest committed checkpoint\n",
                static_cast<long long>(save.step), save.why.c_str());
  std::fflush(stdout);
}

bool rtxrt::program::awaitNextEpoch(Run &run, TrainState &state,
                                    int64_t epoch, const std::string &lost) {
  std::fprintf(stderr,
               "%slost a peer after step %lld (%s); in-job recovery: waiting "
               "for epoch %lld\n",
               run.who().c_str(), static_cast<long long>(state.stepsDone),
               lost.c_str(), static_cast<long long>(epoch + 1));
  EpochBoard &board = *run.board;
  board.reportLost(epoch, run.self.rank, state.stepsDone,
                   lost.substr(0, lost.find('\n')));
  double wait = run.timeout->rendezvous();
  EpochBoard::Decision next =
      board.waitDecision(epoch, wait, [] { return preemptionRequested(); });
  if (next == EpochBoard::Decision::Replace)
    return true;
  if (next == EpochBoard::Decision::Shrink) {
    // The smaller world is another program: save what the survivors hold
    // for it, and end.
    ShrinkSave save = saveForShrink(
        run.whole, run.spec, *run.device, state.args, run.flags.checkpoint,
        board, epoch, run.self.rank, wait,
        [&state](int64_t step) { return state.checkpointMetadata(step); });
    sayShrinkSave(save, run.flags.checkpoint.dir);
    return false;
  }
  if (preemptionRequested())
    throw Error("in-job recovery: stopped by a signal while waiting for "
                "epoch " +
                std::to_string(epoch + 1) + " (rtx-launch gave up on it)");
  throw Error("in-job recovery: rtx-launch did not open epoch " +
              std::to_string(epoch + 1) + " within " +
              std::to_string(int(wait)) + " s after this rank lost a peer (" +
              lost + ")");
}
