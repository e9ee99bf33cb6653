//===- Run.cpp - what a run decides once, before its first epoch ----------===//

#include "Run.h"

#include "Checkpointing.h"
#include "Offload.h"
#include "PipelineView.h"

#include "rtxrt/elastic/EpochBoard.h"

#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

bool Run::start(int argc, char **argv) {
  self = placementFromEnvironment();
  // What rtx-launch hands every rank, read once (LaunchEnvironment.h).
  LaunchHandoff handoff = readLaunchHandoff(processEnvironment());
  flags = parseFlags(argv[0], argc, argv, handoff);
  if (flags.help) {
    printHelp(argv[0], spec);
    return false;
  }
  // --store wins over the store the launcher handed over.
  if (!flags.store.empty() && flags.store != self.launch.store) {
    self.launch.store = flags.store;
    self.launch.storeSource = "--store";
  }
  id = self.launch.runId;
  if (self.rank == 0 && self.world > 1)
    std::printf("launch: %s\n", self.launch.describe().c_str());
  checkPlacement(spec, self);
  spec = pipelineView(whole, self.rank);
  tracer.configure(flags.trace, self.rank, self.world);
  device.emplace(spec.device, self);
  if (flags.tf32) {
    if (!spec.device)
      throw Error("--tf32 is an option of GPU programs (TF32 tensor cores); "
                  "this is a CPU program");
    spec.device->setTf32(true);
  }
  if (flags.portableKernels) {
    if (!spec.device)
      throw Error("--portable-kernels is an option of GPU programs; this is "
                  "a CPU program");
    spec.device->usePortableKernels();
  }
  // rtx-launch --recover in-job (InJobRecovery.h): a lost peer does not
  // end this process.
  recovery = RecoveryMode::of(handoff);
  recovery.inJob = recovery.inJob && self.world > 1;
  // Ranks meet under the rendezvous timeout (they may start seconds apart
  // on a loaded machine); the steps run under --timeout (StepTimeout.h).
  timeout.emplace(flags.timeoutAuto, flags.timeout, flags.rendezvousTimeout);
  return true;
}

void Run::startProgress(int64_t untilStep) {
  // A token file (--data) replaces the batch at every step. It is opened
  // after the arguments are loaded, as the steps read it.
  TokenInputs inputs{"tokens", "labels"};
  if (!flags.data.empty()) {
    inputs = findTokenInputs(whole, {flags.dataTokens, flags.dataLabels});
    data.emplace(flags.data, "--data", spec, inputs, self.rank);
  }
  if (!flags.eval.data.empty())
    openEvalData(inputs);
  // With --checkpoint, SIGTERM and SIGINT pre-empt the run: it stops after
  // a step that every rank agrees on and commits its checkpoint.
  if (!flags.checkpoint.dir.empty() && flags.checkpoint.saveOnPreemption)
    installPreemptionHandler();
  progress.emplace(spec, MetricsPlace{self.rank, self.localRank, id}, untilStep,
                   flags, inputs.tokens);
  tracer.setRunInfo(spec.mesh.spec(), id);
  if (recovery.inJob)
    board.emplace(self.launch.store, id, timeout->rendezvous());
}

void Run::openEvalData(const TokenInputs &inputs) {
  // An offloaded step writes its new state into the offload tier while it
  // runs (StepContext::finishStep): a held-out step would update the state.
  if (anyStageOffloads(whole))
    throw Error("--eval-data runs the step on held-out batches and discards "
                "its results, but this program offloads its state "
                "(rtx-shard-state{offload}), which the step updates in the "
                "offload tier as it runs: evaluation would change it");
  evalData.emplace(flags.eval.data, "--eval-data", spec, inputs, self.rank);
  evalData->checkBatches(flags.eval.batches);
}

Rendezvous Run::rendezvous(int64_t epoch) const {
  return Rendezvous{self.launch.store, EpochBoard::epochRun(id, epoch)};
}

bool Run::writeTrace() const {
  if (!tracer.enabled())
    return true;
  try {
    tracer.write();
    if (tracer.dropped() > 0)
      std::fprintf(stderr,
                   "%swarning: the trace kept its first %lld events and "
                   "dropped %lld (raise --trace-max-events or trace fewer "
                   "steps with --trace-steps)\n",
                   who().c_str(), static_cast<long long>(tracer.recorded()),
                   static_cast<long long>(tracer.dropped()));
    return true;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%serror: %s\n", who().c_str(), error.what());
    return false;
  }
}

std::string Run::who() const {
  return spec.name + ": rank " + std::to_string(self.rank) + ": ";
}
