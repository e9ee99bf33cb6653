//===- AlphaBetaFit.cpp - t(n) = alpha + n / beta from timings ------------===//

#include "AlphaBetaFit.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

using namespace rtx::calibrate;

namespace {
void checkSamples(const std::vector<Sample> &samples) {
  if (samples.empty())
    throw std::invalid_argument("alpha-beta fit: no samples");
  for (const Sample &s : samples)
    if (!(s.seconds > 0) || !std::isfinite(s.seconds) || !(s.bytes >= 0))
      throw std::invalid_argument(
          "alpha-beta fit: sample of " + std::to_string(s.bytes) +
          " bytes has time " + std::to_string(s.seconds) +
          " s (times must be positive, sizes non-negative)");
}

std::string number(double v) {
  std::ostringstream out;
  out.precision(3);
  out << v;
  return out.str();
}
} // namespace

double rtx::calibrate::median(std::vector<double> values) {
  if (values.empty())
    throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid]
                           : 0.5 * (values[mid - 1] + values[mid]);
}

std::optional<AlphaBeta>
rtx::calibrate::leastSquaresFit(const std::vector<Sample> &samples) {
  if (samples.size() < 2)
    return std::nullopt;
  for (const Sample &s : samples)
    if (!(s.seconds > 0) || !std::isfinite(s.seconds))
      return std::nullopt;
  // Sizes are scaled to MiB so that the normal equations' sums stay within a
  // few orders of magnitude of each other (bytes^2 of 64 MiB is 4.5e15).
  constexpr double kScale = 1024.0 * 1024.0;
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const Sample &s : samples) {
    double w = 1.0 / (s.seconds * s.seconds);
    double x = s.bytes / kScale;
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    st += w * s.seconds;
    sxt += w * x * s.seconds;
  }
  double det = sw * sxx - sx * sx;
  // Every size equal (or nearly): the slope is undetermined.
  if (!(std::fabs(det) > 1e-12 * sw * sxx))
    return std::nullopt;
  double slope = (sw * sxt - sx * st) / det; // seconds per MiB
  double intercept = (st - slope * sx) / sw;
  AlphaBeta fit;
  fit.method = "least_squares";
  fit.alphaS = intercept;
  fit.betaBytesPerS = slope != 0 ? kScale / slope : INFINITY;
  return fit;
}

AlphaBeta rtx::calibrate::medianEstimate(const std::vector<Sample> &samples) {
  checkSamples(samples);
  std::vector<Sample> sorted = samples;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const Sample &a, const Sample &b) { return a.bytes < b.bytes; });
  size_t half = sorted.size() / 2;
  // The larger half (with one sample, that sample) gives the bandwidth.
  std::vector<double> rates;
  for (size_t i = half; i < sorted.size(); ++i)
    if (sorted[i].bytes > 0)
      rates.push_back(sorted[i].bytes / sorted[i].seconds);
  AlphaBeta estimate;
  estimate.method = "median";
  estimate.betaBytesPerS = rates.empty() ? INFINITY : median(rates);
  std::vector<double> rests;
  for (size_t i = 0; i < std::max<size_t>(half, 1); ++i)
    rests.push_back(std::max(
        0.0, sorted[i].seconds - sorted[i].bytes / estimate.betaBytesPerS));
  estimate.alphaS = median(rests);
  return estimate;
}

AlphaBeta rtx::calibrate::fitAlphaBeta(const std::vector<Sample> &samples) {
  checkSamples(samples);
  std::optional<AlphaBeta> fit = leastSquaresFit(samples);
  if (fit && fit->alphaS < 0) {
    // A latency of exactly zero comes out of the normal equations as a
    // rounding error either side of it: no reason to distrust the fit.
    double fastest = samples.front().seconds;
    for (const Sample &s : samples)
      fastest = std::min(fastest, s.seconds);
    if (fit->alphaS > -1e-9 * fastest)
      fit->alphaS = 0;
  }
  std::string problem;
  if (!fit)
    problem = samples.size() < 2 ? "one message size only"
                                 : "all message sizes are equal";
  else if (!(fit->alphaS >= 0))
    problem = "least squares gave alpha = " + number(fit->alphaS) + " s";
  else if (!(fit->betaBytesPerS > 0) || !std::isfinite(fit->betaBytesPerS))
    problem = "least squares gave beta = " + number(fit->betaBytesPerS) +
              " B/s (time does not grow with size)";
  if (problem.empty())
    return *fit;
  AlphaBeta estimate = medianEstimate(samples);
  estimate.warning = problem + "; using the median-based estimate";
  return estimate;
}
