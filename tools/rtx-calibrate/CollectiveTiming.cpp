//===- CollectiveTiming.cpp - alpha-beta of each collective per group size ===//

#include "CollectiveTiming.h"

#include <algorithm>
#include <functional>

using namespace rtx::calibrate;
using rtxrt::Collective;
using rtxrt::DType;
using rtxrt::ReduceKind;
using rtxrt::Tensor;

std::vector<int64_t> rtx::calibrate::defaultMessageSizes(bool quick) {
  if (quick)
    return {4 << 10, 64 << 10, 1 << 20, 4 << 20};
  std::vector<int64_t> sizes;
  for (int64_t n = 4 << 10; n <= (64 << 20); n *= 4)
    sizes.push_back(n);
  return sizes;
}

namespace {
struct Task {
  std::string op;
  int64_t ranks;
};

/// A flat f32 buffer of `elements` (contents do not change the time).
Tensor buffer(int64_t elements) {
  Tensor t = Tensor::uninitialized({elements}, DType::F32);
  std::fill_n(t.data<float>(), elements, 1.0f);
  return t;
}

/// Times `task` at one size on this rank; returns the slowest rank's
/// seconds per operation and the bytes of the full tensor actually moved
/// (rounded down to whole elements per rank).
Sample timeTask(Session &session, const CollectivePlan &plan, const Task &task,
                int64_t bytes, uint32_t &tag) {
  rtxrt::Communicator &comm = *session.communicator();
  const TimingPlan &timing = plan.timing;
  std::function<void()> gap;
  if (plan.computeGapSeconds > 0)
    gap = [&] { computeFor(plan.computeGapSeconds); };
  int64_t g = task.ranks;
  // Every rank's piece whole, so all_gather and reduce_scatter split evenly.
  int64_t elements = std::max<int64_t>(bytes / 4 / g, 1) * g;
  double fullBytes = 4.0 * static_cast<double>(elements);
  std::string what = "calibration " + task.op;

  if (task.op == "send_recv") {
    std::vector<int64_t> pair = session.pairOf();
    bool first = !pair.empty() && session.rank() == pair[0];
    Tensor message = buffer(elements);
    // Ping-pong: a send never waits for its receive to be posted (eager,
    // as in a pipelined program), so one direction alone would time the
    // sender's copy, not the transfer.
    auto roundTrip = [&] {
      int64_t self = first ? 0 : 1, peer = 1 - self;
      uint32_t t = tag++;
      if (first) {
        rtxrt::Completion sent = comm.send(pair, self, peer, t, message, what);
        comm.recv(pair, self, peer, t, message.shape(), DType::F32, what).get();
        sent.get();
      } else {
        comm.recv(pair, self, peer, t, message.shape(), DType::F32, what).get();
        comm.send(pair, self, peer, t, message, what).get();
      }
    };
    double seconds = timeCall(
        session, timing, roundTrip, [&] { session.barrier(pair); },
        !pair.empty(), gap);
    return {fullBytes, seconds / 2};
  }

  std::vector<int64_t> group = session.groupOf(g);
  int64_t index = session.rank() - group.front();
  Collective collective = task.op == "all_reduce"
                              ? Collective::allReduce(ReduceKind::Sum)
                          : task.op == "reduce_scatter"
                              ? Collective::reduceScatter(ReduceKind::Sum, 0)
                              : Collective::allGather(0);
  // all_gather's operand is this rank's piece of the full tensor.
  Tensor input = buffer(task.op == "all_gather" ? elements / g : elements);
  double seconds = timeCall(
      session, timing,
      [&] { Tensor out = comm.run(collective, group, index, input, what); },
      [&] { session.barrier(group); }, true, gap);
  return {fullBytes, seconds};
}
} // namespace

std::vector<CollectiveFit>
rtx::calibrate::measureCollectives(Session &session, const CollectivePlan &plan,
                                   double deadline) {
  std::vector<CollectiveFit> fits;
  if (session.world() < 2)
    return fits;
  std::vector<Task> tasks;
  for (const char *op : {"all_reduce", "all_gather", "reduce_scatter"})
    for (int64_t g : session.groupSizes())
      tasks.push_back({op, g});
  tasks.push_back({"send_recv", 2});

  uint32_t tag = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const Task &task = tasks[t];
    CollectiveFit fit;
    fit.op = task.op;
    fit.ranks = task.ranks;
    fit.concurrentGroups = task.op == "send_recv"
                               ? session.world() / 2
                               : session.world() / task.ranks;
    // An equal share of what is left for each remaining task; agreed
    // values only, so every rank skips the same sizes.
    double share = (deadline - session.agreedElapsed()) /
                   static_cast<double>(tasks.size() - t);
    double taskStart = session.agreedElapsed();
    for (int64_t bytes : plan.sizes) {
      double left = share - (session.agreedElapsed() - taskStart);
      if (!fit.samples.empty()) {
        // Time grows at most linearly with size beyond the latency.
        const Sample &last = fit.samples.back();
        double perCall = last.seconds * std::max(1.0, bytes / last.bytes) +
                         plan.computeGapSeconds;
        double predicted =
            2 * perCall +
            plan.timing.repetitions *
                std::max(perCall, plan.timing.minRepetitionSeconds);
        if (predicted > left) {
          fit.skipped.push_back(bytes);
          continue;
        }
      }
      fit.samples.push_back(timeTask(session, plan, task, bytes, tag));
    }
    fit.fit = fitAlphaBeta(fit.samples);
    session.progress(
        "%s over %lld ranks (%lld group(s) at once): alpha %.3g "
        "us, beta %.3g GB/s (%s, %zu sizes%s)",
        fit.op.c_str(), static_cast<long long>(fit.ranks),
        static_cast<long long>(fit.concurrentGroups), fit.fit.alphaS * 1e6,
        fit.fit.betaBytesPerS / 1e9, fit.fit.method.c_str(), fit.samples.size(),
        fit.skipped.empty() ? "" : ", larger ones skipped for time");
    if (!fit.fit.warning.empty())
      session.progress("warning: %s over %lld ranks: %s", fit.op.c_str(),
                       static_cast<long long>(fit.ranks),
                       fit.fit.warning.c_str());
    fits.push_back(std::move(fit));
  }
  return fits;
}
