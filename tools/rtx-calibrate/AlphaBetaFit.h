//===- AlphaBetaFit.h - t(n) = alpha + n / beta from timings ----*- C++ -*-===//
//
// The cost model prices a collective of n bytes as alpha + n / beta per group
// size (a latency and a bandwidth, Hockney's model). rtx-calibrate times each
// collective at message sizes spanning four orders of magnitude and fits the
// two numbers here. Plain least squares on seconds would be dominated by the
// largest messages (their residuals are 10^4 times larger), leaving alpha as
// the noise of a 64 MiB transfer, often negative. The fit therefore minimises
// the *relative* residuals (weights 1/t^2), so a 4 KiB message's 20 us
// matters as much as a 64 MiB message's 50 ms: alpha comes from the small
// messages, beta from the large ones, as an engineer reading the table would
// take them.
//
// No dependency beyond the standard library, so it is unit-tested alone
// (test/Unit/Calibrate).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_CALIBRATE_ALPHABETAFIT_H
#define RTX_TOOLS_RTX_CALIBRATE_ALPHABETAFIT_H

#include <optional>
#include <string>
#include <vector>

namespace rtx::calibrate {

/// One timing: a message of `bytes` took `seconds`.
struct Sample {
  double bytes = 0, seconds = 0;
};

struct AlphaBeta {
  double alphaS = 0;        // seconds per message
  double betaBytesPerS = 0; // bytes per second
  /// "least_squares", or "median" when the fit was not sane and the
  /// median-based estimate replaced it.
  std::string method;
  /// Why the least-squares fit was refused; empty when it was kept.
  std::string warning;
};

/// The median of `values` (the mean of the middle two for an even count).
/// Throws std::invalid_argument when `values` is empty.
double median(std::vector<double> values);

/// Weighted least squares of t = alpha + n / beta with weights 1/t^2 (see
/// the file comment). Needs at least two distinct sizes and positive
/// timings; nullopt otherwise, and when the system is singular. The result
/// is not checked: alpha may be negative, beta negative or infinite.
std::optional<AlphaBeta> leastSquaresFit(const std::vector<Sample> &samples);

/// A robust estimate when the fit is not usable: beta is the median of n/t
/// over the larger half of the sizes (where bandwidth dominates), alpha the
/// median over the smaller half of what the time leaves after n/beta,
/// floored at 0. Throws std::invalid_argument on no samples or a
/// non-positive time.
AlphaBeta medianEstimate(const std::vector<Sample> &samples);

/// The least-squares fit when it is sane (alpha >= 0, 0 < beta < inf);
/// otherwise the median-based estimate, with `warning` saying why.
/// Throws std::invalid_argument on no samples or a non-positive time.
AlphaBeta fitAlphaBeta(const std::vector<Sample> &samples);

} // namespace rtx::calibrate

#endif // RTX_TOOLS_RTX_CALIBRATE_ALPHABETAFIT_H
