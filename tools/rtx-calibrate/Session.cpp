//===- Session.cpp - the ranks of one calibration -------------------------===//

#include "Session.h"

#include "AlphaBetaFit.h"

#include "rtxrt/kernels/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace rtx::calibrate;
using rtxrt::DType;
using rtxrt::Tensor;

Session::Session(const rtxrt::LaunchEnvironment &launch,
                 const std::string &store, double timeoutSeconds)
    : rank_(launch.rank), world_(launch.world),
      start_(std::chrono::steady_clock::now()) {
  if (world_ == 1)
    return;
  // The same list, in the same order, on every rank (Gloo connects the
  // groups one after another); GlooCommunicator skips repeats.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g : groupSizes())
    groups.push_back(groupOf(g));
  if (std::vector<int64_t> pair = pairOf(); !pair.empty())
    groups.push_back(pair);
  comm_ =
      rtxrt::makeGlooCommunicator(
      rank_, world_, rtxrt::Rendezvous{store, launch.storeRunId()}, groups,
      timeoutSeconds);
}

std::vector<int64_t> Session::groupSizes() const {
  std::vector<int64_t> sizes;
  for (int64_t g = 2; g <= world_; ++g)
    if (world_ % g == 0)
      sizes.push_back(g);
  return sizes;
}

std::vector<int64_t> Session::groupOf(int64_t g) const {
  std::vector<int64_t> group;
  for (int64_t r = rank_ / g * g; r < rank_ / g * g + g; ++r)
    group.push_back(r);
  return group;
}

std::vector<int64_t> Session::pairOf() const {
  int64_t first = rank_ / 2 * 2;
  if (first + 1 >= world_)
    return {};
  return {first, first + 1};
}

double Session::localElapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start_)
      .count();
}

std::vector<double> Session::agreeMax(const std::vector<double> &values) {
  std::vector<double> local = values;
  local.push_back(localElapsed());
  if (world_ > 1) {
    std::vector<int64_t> everyone;
    for (int64_t r = 0; r < world_; ++r)
      everyone.push_back(r);
    Tensor mine({static_cast<int64_t>(local.size())}, DType::F64);
    std::copy(local.begin(), local.end(), mine.data<double>());
    std::vector<Tensor> all = comm_->exchange(everyone, mine, "agreement");
    for (const Tensor &theirs : all)
      for (size_t i = 0; i < local.size(); ++i)
        local[i] = std::max(local[i], theirs.data<double>()[i]);
  }
  agreedElapsed_ = local.back();
  local.pop_back();
  return local;
}

void Session::barrier(const std::vector<int64_t> &group) {
  if (group.size() < 2)
    return;
  comm_->run(rtxrt::Collective::allReduce(rtxrt::ReduceKind::Sum), group,
             rank_ - group.front(), Tensor({1}, DType::F32), "barrier");
}

void Session::progress(const char *format, ...) {
  if (rank_ != 0)
    return;
  std::va_list args;
  va_start(args, format);
  std::fputs("rtx-calibrate: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(stderr);
}

void rtx::calibrate::computeFor(double seconds) {
  using Clock = std::chrono::steady_clock;
  static const Tensor operand = [] {
    Tensor t = Tensor::uninitialized({64, 64}, DType::F32);
    std::fill_n(t.data<float>(), t.numel(), 0.5f);
    return t;
  }();
  Clock::time_point begin = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - begin).count() < seconds)
    Tensor product = rtxrt::matmul(operand, operand, false, false);
}

double rtx::calibrate::timeCall(Session &session, const TimingPlan &plan,
                                const std::function<void()> &call,
                                const std::function<void()> &beforeBatch,
                                bool participates,
                                const std::function<void()> &beforeCall) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point begin) {
    return std::chrono::duration<double>(Clock::now() - begin).count();
  };
  // Appends to `times` one time per call, or one mean per batch when
  // `perCall` is false.
  std::vector<double> times;
  // Untimed work before each call: what it costs is not the call's, and
  // the batch's own clock cannot tell them apart.
  double before = 0;
  auto batch = [&](int64_t calls, bool perCall) {
    if (beforeBatch)
      beforeBatch();
    if (!participates) {
      times.push_back(0);
      return;
    }
    Clock::time_point begin = Clock::now();
    for (int64_t i = 0; i < calls; ++i) {
      if (beforeCall) {
        Clock::time_point work = Clock::now();
        beforeCall();
        before += seconds(work);
      }
      Clock::time_point one = Clock::now();
      call();
      if (perCall)
        times.push_back(seconds(one));
    }
    if (!perCall)
      times.push_back(seconds(begin) / static_cast<double>(calls));
  };
  batch(1, true); // warm-up: first-touch pages, connections; not kept
  times.clear();
  before = 0;
  batch(1, true);
  std::vector<double> probed = session.agreeMax({times.back(), before});
  double probe = probed[0], gap = probed[1];
  times.clear();
  int64_t calls = std::clamp<int64_t>(
      static_cast<int64_t>(
          std::ceil(plan.minRepetitionSeconds / std::max(probe + gap, 1e-9))),
      1, plan.maxCallsPerRepetition);
  // The mean, not the median: a step pays for every call it makes, also
  // for the ones a descheduled thread stretched (on a loaded or virtual
  // machine a wake-up can take a scheduler tick, milliseconds). The
  // median, used before, dropped them, and the programs' collectives then
  // cost about 1.4x their calibrated fit and their GEMMs ran 10-15% below
  // their calibrated rates (docs/calibration.md). A batch's mean is that
  // of its calls, so calls are timed one by one only where untimed work
  // comes between them.
  for (int r = 0; r < plan.repetitions; ++r)
    batch(calls, static_cast<bool>(beforeCall));
  double sum = 0;
  for (double t : times)
    sum += t;
  return session.agreeMax({sum / static_cast<double>(times.size())}).front();
}
