//===- Program.cpp - the main of emitted training programs ----------------===//
//
// runProgram reads top to bottom as a run goes; each part it calls lives in
// lib/program/ (flags, ranks and groups, arguments, token data, the step
// loop, metrics, result and state files).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/Program.h"
#include "rtxrt/elastic/EpochBoard.h"

#include "program/Checkpointing.h"
#include "program/ClockSync.h"
#include "program/Flags.h"
#include "program/Groups.h"
#include "program/InJobRecovery.h"
#include "program/Metrics.h"
#include "program/Offload.h"
#include "program/PipelineView.h"
#include "program/StateFiles.h"
#include "program/StepLog.h"
#include "program/StepLoop.h"
#include "program/TokenData.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <tuple>

using namespace rtxrt;
using namespace rtxrt::program;

/// Writes the trace, also after a failure (what it recorded up to there
/// helps to find why); a trace that cannot be written is reported, never
/// hides the run's own error.
static void writeTrace(const Tracer &tracer, const ProgramSpec &spec,
                       int64_t rank) {
  if (!tracer.enabled())
    return;
  try {
    tracer.write();
    if (tracer.dropped() > 0)
      std::fprintf(stderr,
                   "%s: rank %lld: warning: the trace kept its first %lld "
                   "events and dropped %lld (raise --trace-max-events or "
                   "trace fewer steps with --trace-steps)\n",
                   spec.name.c_str(), static_cast<long long>(rank),
                   static_cast<long long>(tracer.recorded()),
                   static_cast<long long>(tracer.dropped()));
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%s: rank %lld: error: %s\n", spec.name.c_str(),
                 static_cast<long long>(rank), error.what());
  }
}

int rtxrt::runProgram(const ProgramSpec &whole, int argc, char **argv) {
  // Until the rank is known, the whole program; then its rank's part.
  ProgramSpec spec = whole;
  Placement self;
  Tracer tracer;
  // A write to a peer that died (Gloo's TCP pairs) must fail with EPIPE,
  // which the collective reports, not kill this rank with SIGPIPE: a
  // survivor of in-job recovery keeps its process.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    self = placementFromEnvironment();
    Flags flags = parseFlags(argv[0], argc, argv);
    if (flags.help) {
      printHelp(argv[0], spec);
      return 0;
    }
    // --store wins over the store the environment defines.
    if (!flags.store.empty() && flags.store != self.launch.store) {
      self.launch.store = flags.store;
      self.launch.storeSource = "--store";
    }
    // The store's keys are prefixed by the run (comm/Store.cpp): give it
    // the launcher's job id when no rtx-launch set one.
    if (!self.launch.runId.empty())
      setenv("RTX_RUN_ID", self.launch.runId.c_str(), 0);
    const char *runId = std::getenv("RTX_RUN_ID");
    std::string run = runId ? runId : self.launch.runId;
    if (self.rank == 0 && self.world > 1)
      std::printf("launch: %s\n", self.launch.describe().c_str());
    checkPlacement(spec, self);
    spec = pipelineView(whole, self.rank);
    tracer.configure(flags.trace, self.rank, self.world);
    ProgramDevice device(spec.device, self);
    // rtx-launch --recover in-job (program/InJobRecovery.h): a lost peer
    // does not end this process.
    RecoveryMode recovery = RecoveryMode::fromEnvironment();
    recovery.inJob = recovery.inJob && self.world > 1;
    // Ranks meet under the rendezvous timeout (they may start seconds apart
    // on a loaded machine); the steps run under --timeout (StepTimeout.h).
    StepTimeout timeout(flags.timeoutAuto, flags.timeout,
                        flags.rendezvousTimeout);

    // Arguments: parameters from --state, --params or their initializers,
    // optimizer state from --state or zero, data from --inputs or drawn;
    // a token file (--data) replaces the batch at every step.
    // The loader goes before the steps: what it read whole (a parameter
    // this rank holds a shard of) is not held through the run.
    // Offloaded buffers (rtx-shard-state{offload}) go to their tier, one
    // at a time; the step gets a reference (an undefined tensor).
    std::unique_ptr<OffloadStore> offload = openOffload(spec, flags, self.rank);
    // The arguments and the steps done, from a checkpoint (`from`) or from
    // where the run first started.
    std::map<std::string, std::string> resumedMetadata;
    auto loadArguments =
        [&](std::shared_ptr<const checkpoint::CheckpointReader> from) {
          ArgumentSources sources = argumentSources(flags);
          if (from) {
            // The checkpoint wins over where the run first started from.
            if (self.rank == 0 &&
                (!sources.stateDir.empty() || !sources.paramsDir.empty()))
              std::printf("resume: the checkpoint replaces %s\n",
                          sources.stateDir.empty() ? "--params" : "--state");
            sources.stateDir.clear();
            sources.paramsDir.clear();
            sources.paramsPartial = false;
            sources.checkpoint = from;
          }
          ArgumentLoader loader(spec.mesh, sources);
          std::vector<Tensor> loaded;
          for (const ArgSpec &arg : spec.args) {
            Tensor block = loadOrOffload(loader, offload.get(), arg, self.rank);
            loaded.push_back(block.defined() ? device.toDevice(block) : block);
          }
          resumedMetadata = from ? from->manifest().metadata
                                 : std::map<std::string, std::string>();
          return std::make_pair(std::move(loaded),
                                from ? stepsDoneOf(*from)
                                : flags.state.empty()
                                    ? int64_t(0)
                                    : readStepsDone(flags.state));
        };
    // --resume: the newest committed checkpoint, whatever plan wrote it.
    // Each rank checks the CRC32C of the chunks it reads; one that finds a
    // chunk corrupt starts from where the run started for now, and once
    // the ranks meet they agree (agreeOnResume) to take an older one.
    std::string corruptChunk, resumedDir;
    std::vector<std::string> corruptCheckpoints;
    auto resumeFrom = [&](const CheckpointFlags &resume) {
      auto reader = openResumeCheckpoint(resume, self.rank, corruptCheckpoints);
      resumedDir = reader ? reader->directory() : "";
      corruptChunk.clear();
      try {
        return loadArguments(reader);
      } catch (const checkpoint::CorruptChunk &corrupt) {
        corruptChunk = corrupt.what();
        return loadArguments(nullptr);
      }
    };
    std::vector<Tensor> args;
    int64_t stepsBefore = 0;
    std::tie(args, stepsBefore) = resumeFrom(flags.checkpoint);
    std::optional<TokenData> data;
    if (!flags.data.empty())
      data.emplace(flags.data, spec, self.rank);
    // The global step the run ends after: --until-step N (a restarted job
    // passes the same command line each time), else --steps more.
    int64_t untilStep =
        flags.untilStep > 0 ? flags.untilStep : stepsBefore + flags.steps;
    // With --checkpoint, SIGTERM and SIGINT pre-empt the run: it stops
    // after a step that every rank agrees on and commits its checkpoint.
    if (!flags.checkpoint.dir.empty() && flags.checkpoint.saveOnPreemption)
      installPreemptionHandler();
    Progress progress(spec, MetricsPlace{self.rank, self.localRank, run},
                      std::max<int64_t>(0, untilStep - stepsBefore), flags);
    tracer.setRunInfo(spec.mesh.spec(), run);
    std::optional<EpochBoard> board;
    if (recovery.inJob)
      board.emplace(self.launch.store, run, timeout.rendezvous());

    // Where the state's blocks are under this plan (a hash over every
    // rank): the checkpoints record it, and a resume's log compares hashes
    // only when the checkpoint's is the same.
    std::string layout;
    auto checkpointMetadata =
        [&](int64_t step) -> std::map<std::string, std::string> {
      return {{"program", spec.name},
              {"mesh", spec.mesh.spec()},
              {"run", run},
              {"steps_done", std::to_string(step)},
              // Batches of --data read so far: the data position.
              {"data_position", std::to_string(step)},
              {"state_layout", layout}};
    };

    // Once the ranks meet after a resume: when any rank found a chunk
    // corrupt, every rank skips that checkpoint and reads the next older,
    // until all read theirs whole.
    auto agreeOnResume = [&](ProcessGroups &groups,
                             const CheckpointFlags &resume) {
      while (groups.firstFailedRank(corruptChunk.empty(),
                                    "the chunks of the checkpoint --resume "
                                    "read") >= 0) {
        if (!corruptChunk.empty()) {
          // The reader's message names the checkpoint first: once is enough.
          std::string prefix = "checkpoint " + resumedDir + ": ";
          if (corruptChunk.rfind(prefix, 0) == 0)
            corruptChunk.erase(0, prefix.size());
          std::fprintf(stderr,
                       "warning: --resume: skipping checkpoint %s: %s\n",
                       resumedDir.c_str(), corruptChunk.c_str());
        }
        corruptCheckpoints.push_back(resumedDir);
        std::tie(args, stepsBefore) = resumeFrom(resume);
      }
      if (flags.untilStep <= 0)
        untilStep = stepsBefore + flags.steps;
    };

    // --deterministic: the hash of the whole state after the newest step,
    // which a recovery compares the healed state with.
    int64_t hashedStep = -1;
    uint64_t hashedState = 0;
    auto stateHashOver = [&](ProcessGroups &groups,
                             const std::vector<Tensor> &state) {
      return groups.sumOverRanks(
          rankStateHash(spec, device, state, self.rank, offload.get()),
          "the state hash");
    };
    // Epochs: one, unless in-job recovery meets again after a lost peer.
    for (int64_t epoch = recovery.epoch;; ++epoch) {
      std::string lost;
      {
        setenv("RTX_RUN_ID", EpochBoard::epochRun(run, epoch).c_str(), 1);
        ProcessGroups groups(spec, self, device, self.launch.store,
                             timeout.rendezvous(), timeout.shortest());
        timeout.start([&groups](double seconds) {
          groups.communicator().setTimeout(seconds);
        });
        // Every rank measures its clock against rank 0's (a few tiny
        // all-gathers), so that traces of any subset of ranks line up.
        tracer.setClockOffset(groups.measureClockOffset());
        // Every rank of the first epoch resumed (a replacement that joins
        // survivors takes their state, or reads again with them below).
        if (epoch == 0 && flags.checkpoint.resume)
          agreeOnResume(groups, flags.checkpoint);
        if (recovery.inJob) {
          // The replacements take the survivors' state (or every rank the
          // newest checkpoint's) and the survivors' end.
          Healing healed =
              healFromPeers(whole, spec, groups, device, args, stepsBefore);
          // Offloaded state is written back into its tier during the step,
          // so the step that failed may have left part of its new values
          // there: after a loss every rank reads the newest checkpoint.
          // (Offloaded buffers are ZeRO flat buffers, of which no peer holds
          // a replica: healFromPeers sent none of them.)
          bool tornTiers = epoch > 0 && anyStageOffloads(whole);
          if (tornTiers)
            healed.why = "the offloaded state may hold part of the step that "
                         "failed";
          healed.needsCheckpoint = healed.needsCheckpoint || tornTiers;
          untilStep = groups.exchangeFlags(
              untilStep, "the step the run ends after")[healed.leader];
          if (healed.needsCheckpoint) {
            CheckpointFlags resume = flags.checkpoint;
            resume.resume = !resume.dir.empty();
            if (self.rank == 0)
              std::printf("recover: %s: every rank %s\n", healed.why.c_str(),
                          resume.resume ? "reads the newest checkpoint"
                                        : "starts again from where the run "
                                          "started (no --checkpoint)");
            std::tie(args, stepsBefore) = resumeFrom(resume);
            if (resume.resume)
              agreeOnResume(groups, resume);
          } else {
            if (healed.received > 0)
              std::printf("recover: rank %lld received %lld pieces of state "
                          "(step %lld) from rank %lld\n",
                          static_cast<long long>(self.rank),
                          static_cast<long long>(healed.received),
                          static_cast<long long>(healed.stepsDone),
                          static_cast<long long>(healed.source));
            stepsBefore = healed.stepsDone;
            if (epoch > 0 && flags.checkpoint.deterministic)
              checkHealedHash(groups, healed, hashedStep, hashedState,
                              [&] { return stateHashOver(groups, args); });
          }
          // rtx-launch: a failure after this is recovered in the job; one
          // before it (a replacement lost at the rendezvous) restarts all.
          if (epoch > 0)
            board->joined(epoch, self.rank);
          if (epoch > 0 && self.rank == 0)
            std::printf("recover: epoch %lld: %lld ranks, resuming after step "
                        "%lld\n",
                        static_cast<long long>(epoch),
                        static_cast<long long>(self.world),
                        static_cast<long long>(stepsBefore));
          std::fflush(stdout);
        }
        std::string otherPlan;
        if (!flags.checkpoint.dir.empty()) {
          layout = hexHash(
              groups.sumOverRanks(rankLayoutHash(spec, device, args, self.rank),
                                  "the state layout"));
          if (!resumedMetadata.empty())
            otherPlan =
                planDifference(resumedMetadata, spec.mesh.spec(), layout);
        }
        int64_t steps = untilStep - stepsBefore;
        if (steps <= 0 && epoch == recovery.epoch) {
          if (self.rank == 0)
            std::printf("done: %lld steps were done before, --until-step %lld "
                        "asks for no more\n",
                        static_cast<long long>(stepsBefore),
                        static_cast<long long>(untilStep));
          writeTrace(tracer, spec, self.rank);
          return 0;
        }

        // The steps.
        StepContext context(self.rank, spec.mesh, groups.communicator(),
                            spec.device);
        if (tracer.enabled())
          context.setTracer(&tracer);
        context.setOffload(offload.get());
        StepLoop loop{spec,   context,  groups,
                      device, progress, data ? &*data : nullptr};
        if (offload) {
          loop.offloadBoundBytes = offloadBoundBytes(spec, *offload);
          if (self.rank == 0)
            std::printf("offload: %s, at most %lld buffers (%lld bytes) in "
                        "flight per rank\n",
                        offloadTierOf(spec) == "nvme" ? "state in files (nvme)"
                                                      : "state in host memory",
                        static_cast<long long>(offloadSlotsOf(spec)),
                        static_cast<long long>(loop.offloadBoundBytes));
        }
        // Checkpoints: after every --checkpoint-every steps (written in the
        // background while the steps go on), after the last, and when the
        // run is pre-empted.
        std::optional<CheckpointSaver> saver;
        if (!flags.checkpoint.dir.empty())
          saver.emplace(spec, groups, device, flags.checkpoint,
                        checkpointMetadata);
        if (saver)
          saver->setOffload(offload.get());
        // The write-ahead log between checkpoints (program/StepLog.h).
        std::optional<StepLog> log;
        if (!flags.checkpoint.dir.empty())
          log.emplace(flags.checkpoint, self.rank, stepsBefore, otherPlan);
        // After each commit, at once (a crash in a later save must find
        // the log cut), the log keeps only what no kept checkpoint covers.
        if (saver && self.rank == 0)
          saver->setOnCommitted([&](int64_t step) {
            std::vector<std::string> ignored;
            auto kept = checkpoint::findCommitted(
                flags.checkpoint.dir, checkpoint::Verify::Manifest, &ignored);
            log->covered(kept.empty() ? step : kept.front().step);
          });
        auto startSave = [&](int64_t stepsDone,
                             const std::vector<Tensor> &state) {
          TraceScope scope(&tracer, TraceLane::Checkpoint, "checkpoint",
                           "checkpoint");
          scope.setArgs("\"checkpoint_step\": " + std::to_string(stepsDone));
          saver->start(stepsDone, state);
        };
        bool preempted = false;
        if (saver)
          loop.afterStep = [&](int64_t stepsDone,
                               const std::vector<Tensor> &state) {
            uint64_t stateHash = 0;
            if (log->hashesState()) {
              stateHash = stateHashOver(groups, state);
              hashedStep = stepsDone;
              hashedState = stateHash;
            }
            log->afterStep(stepsDone, stateHash);
            if (flags.checkpoint.every > 0 &&
                stepsDone % flags.checkpoint.every == 0)
              startSave(stepsDone, state);
            preempted = saver->atStepBoundary(preemptionRequested());
            return !preempted;
          };
        loop.timeout = &timeout;
        std::vector<Tensor> results;
        try {
          results = loop.run(args, stepsBefore, steps);
        } catch (const CommunicationError &error) {
          if (!recovery.inJob)
            throw;
          // The state of the steps that every piece of it finished: a step
          // is functional, its results replace `args` only when it ends.
          stepsBefore += loop.stepsRun;
          lost = error.what();
          tracer.error(lost); // when it was found, before the teardown
        }
        if (lost.empty()) {
          int64_t stepsDone = stepsBefore + loop.stepsRun;
          // The last checkpoint and the results wait for the slowest rank's
          // writes, which are no step.
          timeout.relax();
          if (saver) {
            if (saver->lastStarted() != stepsDone)
              startSave(stepsDone, args);
            TraceScope scope(&tracer, TraceLane::Checkpoint,
                             "checkpoint commit", "checkpoint");
            saver->finish();
            log->sync();
          }
          if (preempted && self.rank == 0)
            std::printf("pre-empted: stopped after step %lld, its checkpoint "
                        "is committed in %s\n",
                        static_cast<long long>(stepsDone),
                        flags.checkpoint.dir.c_str());
          progress.done();
          if (offload)
            readOffloaded(*offload, spec, results);

          // The final results and state, reassembled on rank 0.
          {
            TraceScope write(
                !flags.out.empty() || !flags.saveState.empty() ? &tracer
                                                               : nullptr,
                TraceLane::Checkpoint, "write results and state", "checkpoint");
            writeResults(spec, groups, results, flags.out, flags.saveState,
                         stepsDone);
          }
          writeTrace(tracer, spec, self.rank);
          return 0;
        }
      } // this epoch's checkpoints, log, step context and groups end here
      // In-job recovery: report the loss and wait for the agent to replace
      // the lost ranks.
      std::fprintf(stderr,
                   "%s: rank %lld: lost a peer after step %lld (%s); in-job "
                   "recovery: waiting for epoch %lld\n",
                   spec.name.c_str(), static_cast<long long>(self.rank),
                   static_cast<long long>(stepsBefore), lost.c_str(),
                   static_cast<long long>(epoch + 1));
      board->reportLost(epoch, self.rank, stepsBefore,
                        lost.substr(0, lost.find('\n')));
      EpochBoard::Decision next = board->waitDecision(
          epoch, timeout.rendezvous(), [] { return preemptionRequested(); });
      if (next == EpochBoard::Decision::Shrink) {
        // The smaller world is another program: save what the survivors
        // hold for it, and end.
        ShrinkSave save = saveForShrink(
            whole, spec, device, args, flags.checkpoint, *board, epoch,
            self.rank, timeout.rendezvous(), checkpointMetadata);
        if (save.speaks && save.committed)
          std::printf("shrink: the survivors' state of step %lld is "
                      "committed in %s%s%s%s\n",
                      static_cast<long long>(save.step),
                      flags.checkpoint.dir.c_str(),
                      save.why.empty() ? "" : " (", save.why.c_str(),
                      save.why.empty() ? "" : ")");
        else if (save.speaks)
          std::printf("shrink: the survivors saved nothing of step %lld (%s): "
                      "the smaller world resumes from the newest committed "
                      "checkpoint\n",
                      static_cast<long long>(save.step), save.why.c_str());
        std::fflush(stdout);
        writeTrace(tracer, spec, self.rank);
        return 0;
      }
      if (next != EpochBoard::Decision::Replace && preemptionRequested())
        throw Error("in-job recovery: stopped by a signal while waiting for "
                    "epoch " +
                    std::to_string(epoch + 1) + " (rtx-launch gave up on it)");
      if (next != EpochBoard::Decision::Replace)
        throw Error("in-job recovery: rtx-launch did not open epoch " +
                    std::to_string(epoch + 1) + " within " +
                    std::to_string(int(timeout.rendezvous())) +
                    " s after this rank lost a peer (" + lost + ")");
    }
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%s: rank %lld: error: %s\n", spec.name.c_str(),
                 static_cast<long long>(self.rank), error.what());
    tracer.error(error.what());
    writeTrace(tracer, spec, self.rank);
    return 1;
  }
}
