//===- StepRunner.cu - the steps of a GPU program: arena and graph --------===//
//
// The GPU runtime's StepRunner (rtxrt/device/StepRunner.h). Each step runs
// with its allocations served by the step arena (StepArena.h) and its
// data-dependent checks deferred to its end. On CUDA, once the arena's plan
// has served an even and an odd step, the next two steps are captured as
// CUDA graphs (one per parity: the survivors of a step alternate between
// two places) and every later step is a graph launch: no host work per
// kernel, no allocation, no synchronisation inside the step. The host
// emulation plans and serves the arena the same way and has no graphs.
//
// Capture needs the step to stay on the compute stream with no host
// synchronisation: the checks are flags read after the launch, the loss is
// read by the step loop after it, and the step's arguments are copied into
// the buffers the graph was captured with (the batch, each step) before
// the launch. Where the step cannot be captured (several ranks, offload,
// tracing: StepLoop says why) it runs from the host with the arena alone.
//
//===----------------------------------------------------------------------===//

#include "Portable.h"
#include "StepState.h"

#include "rtxrt/device/StepRunner.h"

#include <array>
#include <memory>

using namespace rtxrt;
using namespace rtxrt::gpu;
using namespace rtxrt::gpu::detail;

StepState &gpu::detail::stepState() {
  static auto *state = new StepState();
  return *state;
}

void gpu::detail::runChecks(const std::vector<DeferredCheck> &checks) {
  for (const DeferredCheck &check : checks)
    if (flagged(check.flag))
      check.hostCheck(); // throws the op's message
}

void gpu::detail::checkFlag(const Tensor &flag,
                            std::function<void()> hostCheck) {
  StepState &state = stepState();
  if (state.deferChecks && std::this_thread::get_id() == state.stepThread)
    state.checks.push_back({flag, std::move(hostCheck)});
  else if (flagged(flag))
    hostCheck();
}

namespace {

/// While alive, a step is open: the arena serves its allocations and its
/// checks wait for its end. Closed on every path (an exception included).
class OpenStep {
public:
  OpenStep(StepState &state, int64_t step) : state_(state) {
    state_.checks.clear();
    state_.deferChecks = true;
    state_.stepThread = std::this_thread::get_id();
    state_.arena.beginStep(step);
  }
  /// Ends the step; its deferred checks, to run after its device work.
  std::vector<DeferredCheck> close() {
    closed_ = true;
    state_.deferChecks = false;
    state_.arena.endStep();
    return std::move(state_.checks);
  }
  ~OpenStep() {
    if (closed_)
      return;
    state_.deferChecks = false;
    state_.checks.clear();
    try {
      state_.arena.endStep();
    } catch (...) {
      // The step's own error is the one to report.
    }
  }

private:
  StepState &state_;
  bool closed_ = false;
};

std::string bytesText(int64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

#if defined(__CUDACC__)
/// One parity's captured step: its graph, where it reads each argument
/// and what it returns.
struct CapturedStep {
  cudaGraphExec_t exec = nullptr;
  /// Each argument's device address and size when captured; the batch of
  /// a later step is copied there before a launch. Arguments outside the
  /// arena (the batch) are held here so their buffers stay; those in the
  /// arena are the other parity's results, placed there by its launch.
  std::vector<void *> argAddress;
  std::vector<size_t> argBytes;
  std::vector<Tensor> heldArgs;
  std::vector<Tensor> results;
  std::vector<DeferredCheck> checks;
  CapturedStep() = default;
  CapturedStep(const CapturedStep &) = delete;
  CapturedStep &operator=(const CapturedStep &) = delete;
  ~CapturedStep() {
    if (exec)
      (void)cudaGraphExecDestroy(exec);
  }
};
#endif

class GpuStepRunner : public StepRunner {
public:
  explicit GpuStepRunner(const StepRunnerOptions &options) : options_(options) {
    StepState &state = stepState();
    state.arena.reset(
        options.arena, [](size_t bytes) { return poolAllocate(bytes); },
        options.log);
    say(options.arena ? "step arena: on (the first step warms up, the "
                        "second is recorded and planned; --no-step-arena "
                        "turns it off)"
                      : "step arena: off (--no-step-arena)");
#if defined(__CUDACC__)
    if (!options.cudaGraph)
      say("CUDA graphs: off (--no-cuda-graph)");
    else if (!options.arena)
      say("CUDA graphs: off (a captured step needs the step arena's fixed "
          "buffers; --no-step-arena)");
    else if (!options.noCaptureReason.empty())
      say("CUDA graphs: off (" + options.noCaptureReason + ")");
    else {
      capture_ = true;
      say("CUDA graphs: each step captured once the arena has served an "
          "even and an odd step, then replayed (--no-cuda-graph turns it "
          "off)");
    }
#else
    say(std::string("CUDA graphs: off (") + backendName() +
        ": graphs are CUDA-only)");
#endif
  }

  ~GpuStepRunner() override {
    stepState().arena.reset(
        false, [](size_t b) { return poolAllocate(b); }, nullptr);
  }

  std::vector<Tensor> run(int64_t step, const StepBody &body,
                          const std::vector<Tensor> &args) override {
#if defined(__CUDACC__)
    if (capture_) {
      if (graphs_[0] && graphs_[1])
        return replay(*graphs_[nextGraph_ ^= 1], args);
      if (stepState().arena.stepsOnPlan() >= 2)
        return captureAndLaunch(step, body, args);
    }
#endif
    return runEagerly(step, body, args);
  }

  void finish() override {
    StepArenaStats stats = stepState().arena.stats();
    if (!stats.planned)
      return;
    std::string line = "step arena: " + bytesText(stats.arenaBytes) + " for " +
                       std::to_string(stats.buffersPerStep) +
                       " buffers a step (" + bytesText(stats.peakBytes) +
                       " live at most over an even and an " +
                       "odd step); static plan: ";
    if (options_.staticPeakBytes >= 0)
      line += bytesText(options_.staticPeakBytes) + " peak, of which " +
              bytesText(options_.staticArgumentBytes) + " arguments";
    else
      line += "unknown";
    say(line);
    say("step arena: " + std::to_string(stats.servedSteps) +
        " steps served from the plan (" + std::to_string(stats.servedBuffers) +
        " buffers); " + std::to_string(poolAllocationsInServedSteps_) +
        " device allocations inside them; " + std::to_string(stats.plans) +
        (stats.plans == 1 ? " plan" : " plans") +
#if defined(__CUDACC__)
        "; " + std::to_string(launches_) + " graph launches"
#else
        ""
#endif
    );
  }

private:
  void say(const std::string &line) const {
    if (options_.log)
      options_.log(line);
  }

  /// The step from the host, its allocations served by the arena.
  std::vector<Tensor> runEagerly(int64_t step, const StepBody &body,
                                 const std::vector<Tensor> &args) {
    StepState &state = stepState();
    int64_t before = allocatorStats().allocations;
    OpenStep open(state, step);
    bool onPlan = state.arena.serving();
    std::vector<Tensor> results = body(args);
    onPlan = onPlan && state.arena.onPlan();
    std::vector<DeferredCheck> checks = open.close();
    if (onPlan)
      poolAllocationsInServedSteps_ += allocatorStats().allocations - before;
    runChecks(checks);
    return results;
  }

#if defined(__CUDACC__)
  /// Captures the step on the compute stream (this thread's work only),
  /// then launches it: a capture records the kernels without running them.
  std::vector<Tensor> captureAndLaunch(int64_t step, const StepBody &body,
                                       const std::vector<Tensor> &args) {
    StepState &state = stepState();
    auto captured = std::make_unique<CapturedStep>();
    const std::string during =
        "while step " + std::to_string(step) + " was captured as a CUDA graph";
    cudaStream_t s = computeStream();
    cudaGraph_t graph = nullptr;
    {
      OpenStep open(state, step);
      check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
            "cudaStreamBeginCapture");
      try {
        captured->results = body(args);
      } catch (const std::exception &error) {
        (void)cudaStreamEndCapture(s, &graph);
        if (graph)
          (void)cudaGraphDestroy(graph);
        throw Error(std::string(error.what()) + " (" + during +
                    "; --no-cuda-graph runs it from the host)");
      }
      check(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
      bool onPlan = state.arena.onPlan();
      captured->checks = open.close();
      if (!onPlan) {
        (void)cudaGraphDestroy(graph);
        throw Error("step arena: step " + std::to_string(step) +
                    " left its plan " + during +
                    "; a captured step must allocate as the planned ones "
                    "did (--no-cuda-graph)");
      }
    }
    cudaError_t instantiated =
        cudaGraphInstantiate(&captured->exec, graph, 0ULL);
    (void)cudaGraphDestroy(graph);
    check(instantiated, "cudaGraphInstantiate");
    keepArgs(*captured, args);
    say("CUDA graphs: step " + std::to_string(step) + " captured (" +
        (state.arena.parity() == 0 ? "even" : "odd") + " steps)");
    int parity = state.arena.parity();
    graphs_[parity] = std::move(captured);
    nextGraph_ = parity;
    return launch(*graphs_[parity]);
  }

  /// Where the graph reads each argument. The arena's buffers stay
  /// with the arena (the other parity's launch writes them); the others
  /// (the batch) are held.
  void keepArgs(CapturedStep &captured, const std::vector<Tensor> &args) {
    for (const Tensor &arg : args) {
      captured.argAddress.push_back(
          arg.defined() ? const_cast<void *>(arg.raw()) : nullptr);
      captured.argBytes.push_back(arg.defined() ? arg.nbytes() : 0);
      captured.heldArgs.push_back(
          arg.defined() && !stepState().arena.holds(arg.raw()) ? arg
                                                               : Tensor());
    }
    arenaMemory_ = stepState().arena.memoryOwner();
  }

  /// A later step of the same parity: its arguments copied to where the
  /// graph reads them (no copy when they are there: the state), then the
  /// launch.
  std::vector<Tensor> replay(CapturedStep &captured,
                             const std::vector<Tensor> &args) {
    if (args.size() != captured.argAddress.size())
      throw Error("CUDA graphs: the step got " + std::to_string(args.size()) +
                  " arguments where it was captured with " +
                  std::to_string(captured.argAddress.size()));
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].defined() || args[i].raw() == captured.argAddress[i])
        continue;
      if (args[i].nbytes() != captured.argBytes[i] || !args[i].onGpu())
        throw Error("CUDA graphs: argument " + std::to_string(i) + " is " +
                    bytesText(static_cast<int64_t>(args[i].nbytes())) +
                    (args[i].onGpu() ? "" : " in host memory") +
                    " where the step was captured with " +
                    bytesText(static_cast<int64_t>(captured.argBytes[i])) +
                    " on the device");
      copyBytes(captured.argAddress[i], args[i].raw(), args[i].nbytes(), false,
                false);
    }
    return launch(captured);
  }

  std::vector<Tensor> launch(CapturedStep &captured) {
    check(cudaGraphLaunch(captured.exec, computeStream()), "cudaGraphLaunch");
    ++launches_;
    runChecks(captured.checks); // waits for the launch when there are any
    return captured.results;
  }

  std::array<std::unique_ptr<CapturedStep>, 2> graphs_;
  int nextGraph_ = 0;
  bool capture_ = false;
  int64_t launches_ = 0;
  /// The arena the graphs write into outlives them.
  std::shared_ptr<void> arenaMemory_;
#endif

  StepRunnerOptions options_;
  int64_t poolAllocationsInServedSteps_ = 0;
};

} // namespace

std::unique_ptr<StepRunner>
gpu::makeStepRunner(const StepRunnerOptions &options) {
  return std::make_unique<GpuStepRunner>(options);
}
