//===- Compute.cpp - GEMM throughput, bandwidth and per-op overhead -------===//

#include "Compute.h"

#include "rtxrt/kernels/Kernels.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

using namespace rtx::calibrate;
using rtxrt::BinaryKind;
using rtxrt::DType;
using rtxrt::Tensor;

std::vector<GemmShape>
rtx::calibrate::parseGemmShapes(const std::string &text) {
  std::vector<GemmShape> shapes;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ';')) {
    if (entry.empty())
      continue;
    GemmShape shape;
    char comma1 = 0, comma2 = 0;
    std::istringstream in(entry);
    if (!(in >> shape.m >> comma1 >> shape.n >> comma2 >> shape.k) ||
        comma1 != ',' || comma2 != ',' || !(in >> std::ws).eof() ||
        shape.m < 1 || shape.n < 1 || shape.k < 1 ||
        std::max({shape.m, shape.n, shape.k}) > (1 << 20))
      throw std::invalid_argument("--gemm-shapes: '" + entry +
                                  "' is not M,N,K with each in [1, 2^20]");
    shapes.push_back(shape);
  }
  if (shapes.empty())
    throw std::invalid_argument("--gemm-shapes: no shape in '" + text + "'");
  return shapes;
}

std::vector<GemmShape> rtx::calibrate::defaultGemmShapes(bool quick) {
  // (n, k): attention and MLP projections from tiny to GPT-2 medium; m: the
  // tokens of a micro-batch, from a decode step to a long sequence.
  std::vector<std::pair<int64_t, int64_t>> layers =
      quick
          ? std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {1024, 1024}}
          : std::vector<std::pair<int64_t, int64_t>>{{64, 64},    {256, 256},
                                                     {768, 768},  {3072, 768},
                                                     {768, 3072}, {1024, 4096}};
  std::vector<int64_t> tokens = quick
                                    ? std::vector<int64_t>{64, 256, 1024}
                                    : std::vector<int64_t>{64, 256, 1024, 4096};
  std::vector<GemmShape> shapes;
  for (int64_t m : tokens)
    for (auto [n, k] : layers)
      shapes.push_back({m, n, k});
  return shapes;
}

namespace {
/// Values that keep every product and sum far from denormals and overflow
/// (zeros or garbage could take other code paths in the BLAS).
Tensor filled(rtxrt::Shape shape) {
  Tensor t = Tensor::uninitialized(std::move(shape), DType::F32);
  float *data = t.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    data[i] = 0.25f + 0.125f * static_cast<float>(i % 7);
  return t;
}

/// Seconds the timing of one call of `perCall` seconds takes: warm-up,
/// probe and the repetitions, each at least the plan's minimum.
double predictedSeconds(const TimingPlan &plan, double perCall) {
  return 2 * perCall +
         plan.repetitions * std::max(perCall, plan.minRepetitionSeconds);
}
} // namespace

ComputeResult rtx::calibrate::measureCompute(Session &session,
                                             const ComputePlan &plan,
                                             double deadline) {
  ComputeResult result;
  // Every batch starts on all ranks at once, so that each rank's time is
  // that of a rank whose peers compute too, as in a step, and not of one
  // that found the machine idle because its peers had finished.
  std::vector<int64_t> everyone = session.groupOf(session.world());
  auto together = [&] { session.barrier(everyone); };

  // Fixed cost per op: a one-element add, allocation of its result included.
  {
    Tensor a = filled({1}), b = filled({1});
    result.opOverheadS = timeCall(
        session, plan.timing,
        [&] { Tensor c = rtxrt::binary(BinaryKind::Add, a, b); }, together);
    session.progress("op overhead (1-element add): %.3g us",
                     result.opOverheadS * 1e6);
  }

  // Bandwidth: two operands read, one result written, 4 bytes each.
  {
    int64_t n = plan.elementwiseElements;
    Tensor a = filled({n}), b = filled({n});
    double seconds = timeCall(
        session, plan.timing,
        [&] { Tensor c = rtxrt::binary(BinaryKind::Add, a, b); }, together);
    result.elementwiseBandwidth = 3.0 * 4.0 * static_cast<double>(n) / seconds;
    session.progress("elementwise bandwidth (add of %lld floats): %.3g GB/s",
                     static_cast<long long>(n),
                     result.elementwiseBandwidth / 1e9);
  }

  // Arithmetic that is not a matrix product: the tanh-approximated GELU,
  // the hottest such kernel of a transformer step and, like the
  // normalisations and the optimizer's update, bound by its arithmetic
  // (its tanh) rather than by memory on a CPU. Its FLOPs are counted as
  // rtx.gelu's CostOpInterface counts them (RTXCost.cpp: 8 per element),
  // so that the planner prices every non-GEMM op's FLOPs at this rate.
  {
    constexpr double kGeluFlopsPerElement = 8;
    int64_t n = plan.vectorElements;
    Tensor a = filled({n});
    double seconds = timeCall(
        session, plan.timing,
        [&] { Tensor c = rtxrt::unary(rtxrt::UnaryKind::GeluTanh, a); },
        together);
    result.vectorFlopsPerS =
        kGeluFlopsPerElement * static_cast<double>(n) / seconds;
    session.progress("vector FLOP rate (GELU of %lld floats): %.3g GFLOP/s",
                     static_cast<long long>(n), result.vectorFlopsPerS / 1e9);
  }

  // GEMMs from the cheapest up, so that the best rate so far predicts the
  // next shape's time (an upper bound: throughput grows with size).
  std::vector<GemmShape> shapes = plan.gemmShapes;
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const GemmShape &a, const GemmShape &b) {
                     return a.flops() < b.flops();
                   });
  // Each shape in both layouts a training step runs: [M, K] x [K, N] (the
  // forward, the input gradient) and [K, M]^T x [K, N] (the weight
  // gradient, X^T dY), which OpenBLAS packs differently and which ran
  // 15-20% slower in the programs' traces at the same shape.
  double bestRate = 0;
  for (const GemmShape &shape : shapes) {
    for (bool transposedLhs : {false, true}) {
      // agreedElapsed() and bestRate are the same on every rank, so all
      // ranks skip the same shapes.
      double left = deadline - session.agreedElapsed();
      double predicted =
          bestRate > 0
              ? predictedSeconds(plan.timing, shape.flops() / bestRate)
              : 0;
      if (predicted > left) {
        session.progress(
            "skipping matmul %lldx%lldx%lld: predicted %.1f s, "
            "%.1f s of the time budget left",
            static_cast<long long>(shape.m), static_cast<long long>(shape.n),
            static_cast<long long>(shape.k), predicted, std::max(left, 0.0));
        result.skipped.push_back(shape);
        break;
      }
      Tensor lhs = transposedLhs ? filled({shape.k, shape.m})
                                 : filled({shape.m, shape.k});
      Tensor rhs = filled({shape.k, shape.n});
      double seconds = timeCall(
          session, plan.timing,
          [&] { Tensor out = rtxrt::matmul(lhs, rhs, transposedLhs, false); },
          together);
      GemmResult gemm{shape, transposedLhs, seconds, shape.flops() / seconds};
      bestRate = std::max(bestRate, gemm.flopsPerS);
      result.gemm.push_back(gemm);
      session.progress("matmul m=%lld n=%lld k=%lld%s: %.3g GFLOP/s (%.3g ms)",
                       static_cast<long long>(shape.m),
                       static_cast<long long>(shape.n),
                       static_cast<long long>(shape.k),
                       transposedLhs ? " (lhs transposed)" : "",
                       gemm.flopsPerS / 1e9, seconds * 1e3);
    }
  }
  return result;
}
