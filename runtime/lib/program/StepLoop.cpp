//===- StepLoop.cpp - the training loop -----------------------------------===//

#include "StepLoop.h"

#include "core/Faults.h"

#include "rtxrt/offload/OffloadStore.h"
#include "rtxrt/program/StateFeedback.h"

#include <chrono>
#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

/// What the offload tier moved during the step (`before` to `now`).
static void recordOffload(StepRecord &record, const OffloadStats &before,
                          const OffloadStats &now, int64_t boundBytes) {
  record.offloadTransfers =
      now.reads + now.writes - before.reads - before.writes;
  record.offloadBytes =
      now.bytesRead + now.bytesWritten - before.bytesRead - before.bytesWritten;
  record.offloadWaitMs = 1000.0 * (now.blockedSeconds - before.blockedSeconds);
  record.offloadPeakInFlightBytes = now.peakInFlightBytes;
  record.offloadBoundBytes = boundBytes;
}

/// The step's global loss, when it has one (a collective: every rank calls
/// it).
static void recordLoss(StepRecord &record, const ProgramSpec &spec,
                       ProcessGroups &groups,
                       const std::vector<Tensor> &results) {
  if (spec.stage >= 0 && spec.stepLossResult >= 0) {
    // Pipelined: one coordinate holds the loss; every rank takes part.
    const ResultSpec &loss = spec.stepResults[spec.stepLossResult];
    record.hasLoss = true;
    record.loss = groups.globalScalar(
        spec.lossResult >= 0 ? results[spec.lossResult]
                             : Tensor(loss.shape, loss.dtype),
        loss.sharding, "the loss of the step", spec.stepLossOwner);
  } else if (spec.lossResult >= 0) {
    record.hasLoss = true;
    record.loss = groups.globalScalar(results[spec.lossResult],
                                      spec.results[spec.lossResult].sharding,
                                      "the loss of the step");
  }
}

bool StepLoop::evaluates(int64_t globalStep, int64_t lastStep) const {
  return globalStep == lastStep ||
         (eval.every > 0 && globalStep % eval.every == 0);
}

// An evaluation is the training step itself on a held-out batch, its loss
// kept and its results (the updated state) dropped: it costs a full step
// (forward, backward and update) per batch. A forward-only function of the
// step is future work. It is exact because a step is a function of its
// arguments: its results are new tensors, and the state becomes them only
// when the loop passes them on (feedback.apply), which the evaluation never
// does, so the parameters, the optimizer state, the step counter, the data
// position, the log of state hashes and the checkpoints stay as they were.
//
// It runs the step function directly, outside the GPU step runner: the
// runner's arena gives a step's survivors the slots of its parity (even or
// odd steps) and its CUDA graphs replay in turn, so a held-out step run
// through it would be counted as the next step and the next training step
// would write its results over the buffers it reads (the live state). Out
// of the runner its buffers come from the device pool and its checks run as
// they are met; the arena and the graphs never see it.
void StepLoop::evaluate(const std::vector<Tensor> &args, int64_t globalStep) {
  std::vector<Tensor> heldOut = args; // shares the state; the step reads it
  double sum = 0;
  for (int64_t batch = 0; batch < eval.batches; ++batch) {
    evalData->loadBatch(batch, heldOut, device);
    std::vector<Tensor> results;
    try {
      results = spec.step(context, heldOut);
      context.finishStep();
      device.synchronize();
    } catch (const CommunicationError &) {
      throw; // a lost peer: in-job recovery needs the error as it is
    } catch (const Error &error) {
      throw Error("--eval-data: held-out batch " + std::to_string(batch) +
                  " at step " + std::to_string(globalStep) + ": " +
                  error.what());
    }
    StepRecord record;
    recordLoss(record, spec, groups, results);
    if (!record.hasLoss)
      throw Error("--eval-data needs a step with a loss; this program's "
                  "step returns none");
    sum += record.loss;
  }
  // The held-out steps' communication is not the next step's.
  (void)context.takeCommunicationStats();
  // Each batch has the same number of labels (a token file has no ignored
  // ones), so the mean of the batches' mean losses is the mean over all
  // their tokens, as one step's loss weighs them.
  EvalRecord record;
  record.globalStep = globalStep;
  record.loss = sum / static_cast<double>(eval.batches);
  record.batches = eval.batches;
  record.tokens = eval.batches * evalData->batchRows() * evalData->seqLength();
  progress.evaluation(record);
}

StepRunnerOptions program::stepRunnerOptions(const ProgramSpec &spec,
                                             bool noStepArena, bool noCudaGraph,
                                             int64_t rank, int64_t world,
                                             bool tracing) {
  StepRunnerOptions options;
  options.arena = !noStepArena;
  options.cudaGraph = !noCudaGraph;
  // What a capture cannot hold: each NCCL collective here waits on the host
  // for its completion against --timeout (NcclCommunicator.cu), Gloo runs
  // through host memory, offload reads and writes files, and traces time
  // each op on the host.
  if (world > 1)
    options.noCaptureReason =
        std::to_string(world) +
        " ranks: their collectives wait on the host (the NCCL timeout "
        "watch, or Gloo through host memory), which a capture cannot hold";
  else if (spec.offloadSlots > 0)
    options.noCaptureReason = "the step offloads state through the host";
  else if (tracing)
    options.noCaptureReason = "--trace times each op from the host";
  options.staticPeakBytes = spec.staticPeakBytes;
  options.staticArgumentBytes = spec.staticArgumentBytes;
  if (rank == 0)
    options.log = [](const std::string &line) {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  return options;
}

std::vector<Tensor> StepLoop::run(std::vector<Tensor> &args,
                                  int64_t stepsBefore, int64_t steps) {
  std::vector<std::string> resultStates;
  for (const ResultSpec &result : spec.results)
    resultStates.push_back(result.state);
  const StateFeedback feedback(spec.args, resultStates);

  const Faults &faults = Faults::get();
  Tracer *tracer = context.tracer();
  std::vector<Tensor> results;
  stepsRun = 0;
  // A GPU program's steps: served by the step arena, captured as a graph.
  const DeviceRuntime *runtime = device.runtime();
  std::unique_ptr<StepRunner> runner;
  if (runtime && runtime->makeStepRunner)
    runner = runtime->makeStepRunner(runnerOptions);
  const StepBody body = [this](const std::vector<Tensor> &stepArgs) {
    std::vector<Tensor> stepResults = spec.step(context, stepArgs);
    context.finishStep();
    return stepResults;
  };
  if (evalData && evaluateFirst && stepsBefore > 0 &&
      evaluates(stepsBefore, stepsBefore + steps))
    evaluate(args, stepsBefore);
  for (int64_t step = 1; step <= steps; ++step) {
    if (tracer)
      tracer->beginStep(step);
    int64_t stepStart = Tracer::now();
    auto iterationStart = std::chrono::steady_clock::now();
    if (data) {
      TraceScope load(tracer, TraceLane::Data, "data load", "data");
      data->loadBatch(stepsBefore + step - 1, args, device);
    }
    // The step's own peak (step_peak_bytes) counts from here: what is held
    // now (the state, this batch) and what the step allocates.
    device.beginPeakWindow();
    OffloadStore *offload = context.offload();
    OffloadStats offloadBefore = offload ? offload->stats() : OffloadStats();
    auto start = std::chrono::steady_clock::now();
    if (faults.slowRank == groups.rank()) {
      TraceScope slow(tracer, TraceLane::Compute,
                      "injected delay (RTX_FAULT_SLOW_RANK)", "fault");
      sleepMs(faults.slowRankMs);
    }
    // A traced step runs uncaptured (the runner keeps graphs off under
    // --trace), its ops timed one by one (OpTiming.h).
    context.beginOpTiming(step);
    results = runner ? runner->run(step, body, args) : body(args);
    device.synchronize(); // the step's time includes its queued kernels
    StepRecord record;
    record.step = step;
    record.globalStep = stepsBefore + step;
    // The optimizer's step count is the global step (it is saved and
    // restored with the state).
    if (spec.lrSchedule)
      record.lr = spec.lrSchedule->at(double(record.globalStep));
    record.ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    context.endOpTiming(); // outside the step's time
    CommunicationStats comm = context.takeCommunicationStats();
    if (offload)
      recordOffload(record, offloadBefore, offload->stats(), offloadBoundBytes);
    if (tracer && tracer->active())
      tracer->span(TraceLane::Compute, "step", "step", stepStart, Tracer::now(),
                   "", "step " + std::to_string(step));
    recordLoss(record, spec, groups, results);
    groups.markProgress(stepsBefore + step);
    if (tracer)
      tracer->endStep();
    progress.step(record, comm);
    feedback.apply(args, results);
    stepsRun = step;
    if (evalData && evaluates(stepsBefore + step, stepsBefore + steps))
      evaluate(args, stepsBefore + step);
    if (timeout)
      // The whole iteration: what a peer may wait for between collectives.
      timeout->observe(std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - iterationStart)
                           .count());
    if (afterStep && !afterStep(stepsBefore + step, args))
      break;
  }
  if (runner)
    runner->finish();
  return results;
}
