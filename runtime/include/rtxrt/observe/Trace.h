//===- Trace.h - per-rank traces in the Chrome trace event format -*- C++
//-*-===//
//
// A run with --trace DIR (or RTX_TRACE=DIR) records what each rank did as
// complete events ("ph": "X") of the Chrome trace event format, which
// Perfetto, chrome://tracing and Holistic Trace Analysis read: one span per
// step, per op (with its IR location, kind, FLOPs and bytes from the cost
// interface; on a GPU timed by device events, program/OpTiming.h), per
// collective (where it ran, with its group, bytes and
// algorithm; and the wait for it, separately), per data load and per state
// write. Each rank writes DIR/rank-R.trace.json at the end of the run (also
// after a failure), and rtx-launch merges them into DIR/trace.json on one
// timeline (rtxrt/observe/TraceMerge.h). docs/observability.md shows them.
//
// Recording is bounded: past `maxEvents` events are counted, not kept, and
// the file says how many were dropped. Outside the traced steps
// (--trace-steps) and without --trace, a span costs one branch.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_TRACE_H
#define RTXRT_TRACE_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace rtxrt {

/// The trace's threads ("tid"): what a span ran on.
enum class TraceLane : int {
  Compute = 0,
  Communication = 1,
  Data = 2,
  Checkpoint = 3,
  /// A GPU program's ops as the device ran them (program/OpTiming.h): their
  /// times are the device's, not the host's calls, so they get a lane of
  /// their own rather than interleave with the host's spans.
  Device = 4
};
const char *traceLaneName(TraceLane lane);

/// What an emitted program knows of one of its ops: rtx-translate writes a
/// table of these, with the FLOPs and bytes of the op's CostOpInterface at
/// its local shapes (0 for ops without a cost), and the kind of work it does
/// (mlir::rtx::opWorkKind: "matmul", "attention", "norm", ...), by which
/// `rtx report` groups its roofline table.
struct OpInfo {
  const char *name;     // "rtx.matmul"
  const char *location; // the op's IR location
  double flops;
  double bytes;
  const char *kind = nullptr; // null: not said
};

/// Which steps to trace and where to.
struct TraceOptions {
  std::string dir; // empty: no trace
  /// Steps of this run, 1-based and inclusive.
  int64_t firstStep = 1;
  int64_t lastStep = std::numeric_limits<int64_t>::max();
  int64_t maxEvents = 1 << 20;
  /// The device's peaks, --peak-tflops (10^12 FLOP/s) and --peak-gbps
  /// (10^9 bytes/s of memory; 0: not given), written into the trace for
  /// `rtx report`'s roofline and MFU.
  double peakTflops = 0;
  double peakGbps = 0;
  /// "5:8", "5:", ":8", "7"; throws Error naming the text otherwise.
  static void parseSteps(const std::string &text, TraceOptions &options);
};

/// Clock alignment of this rank with rank 0, measured at rendezvous
/// (program/ClockSync.h): rank 0's time = this rank's time - offset.
struct ClockOffset {
  double offsetUs = 0;
  double errorUs = 0; // the measurement's bound: |true - measured| <= error
  int64_t rounds = 0;
};

/// One rank's recorder. Thread-safe: the communication thread records too.
class Tracer {
public:
  /// Nanoseconds of the monotonic clock (CLOCK_MONOTONIC: shared by every
  /// process of one machine).
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  Tracer() = default;
  Tracer(const Tracer &) = delete;
  Tracer &operator=(const Tracer &) = delete;
  /// Starts recording for `rank` (does nothing with an empty dir).
  void configure(const TraceOptions &options, int64_t rank, int64_t world);
  bool enabled() const { return enabled_; }
  /// Whether spans are recorded now: tracing is on and the current step is
  /// a traced one (or no step runs: setup and the final writes).
  bool active() const { return active_.load(std::memory_order_relaxed); }
  /// Whether `step` (of this run, 1-based) is one that --trace-steps
  /// traces; false without tracing.
  bool tracesStep(int64_t step) const {
    return enabled_ && step >= options_.firstStep && step <= options_.lastStep;
  }
  /// The step loop's marks: spans between them belong to `step`.
  void beginStep(int64_t step);
  void endStep();
  /// A complete event from `startNs` to `endNs` (Tracer::now()). `name`
  /// and `category` must outlive the tracer (string literals, OpInfo) when
  /// `ownedName` is empty; `argsJson` is the inside of the "args" object.
  void span(TraceLane lane, const char *name, const char *category,
            int64_t startNs, int64_t endNs, std::string argsJson = {},
            std::string ownedName = {});
  /// The error that ends the run, as a zero-length event "error" (category
  /// "error", args.message) at this moment: when the failure was found.
  /// Recorded whenever tracing is on, also outside the traced steps.
  void error(const std::string &message);
  /// An op's span, its arguments from `op`, on `lane`.
  void opSpan(const OpInfo &op, int64_t startNs, int64_t endNs,
              TraceLane lane = TraceLane::Compute);
  /// How the op spans are timed, for the file's otherData.op_clock (a string
  /// literal; default "host": the host's clock around each kernel call).
  void setOpClock(const char *clock) { opClock_ = clock; }

  /// Facts written into the file's "otherData" (mesh, run id, clock).
  void setRunInfo(std::string mesh, std::string runId);
  void setClockOffset(const ClockOffset &offset) { clock_ = offset; }
  const ClockOffset &clockOffset() const { return clock_; }
  /// DIR/rank-R.trace.json, written whole to a temporary name and renamed.
  /// Returns the path; throws Error when it cannot be written.
  std::string write() const;
  int64_t dropped() const { return dropped_; }
  int64_t recorded() const;

private:
  struct Event {
    TraceLane lane;
    const char *name;
    const char *category;
    const OpInfo *op; // an op span: its arguments come from here
    int64_t startNs, endNs;
    int64_t step;
    std::string ownedName, args;
  };
  void add(Event event);
  bool enabled_ = false;
  std::atomic<bool> active_{false};
  TraceOptions options_;
  int64_t rank_ = 0, world_ = 1, step_ = 0;
  std::string mesh_, runId_;
  const char *opClock_ = "host";
  ClockOffset clock_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
  int64_t dropped_ = 0;
};

/// A span from construction to destruction, when the tracer is active.
class TraceScope {
public:
  TraceScope(Tracer *tracer, TraceLane lane, const char *name,
             const char *category)
      : tracer_(tracer && tracer->active() ? tracer : nullptr), lane_(lane),
        name_(name), category_(category), start_(tracer_ ? Tracer::now() : 0) {}
  ~TraceScope() {
    if (tracer_)
      tracer_->span(lane_, name_, category_, start_, Tracer::now(),
                    std::move(args_));
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;
  void setArgs(std::string argsJson) { args_ = std::move(argsJson); }

private:
  Tracer *tracer_;
  TraceLane lane_;
  const char *name_, *category_;
  int64_t start_;
  std::string args_;
};

/// `s` as a JSON string literal, quotes included.
std::string jsonQuote(const std::string &s);

} // namespace rtxrt

#endif // RTXRT_TRACE_H
