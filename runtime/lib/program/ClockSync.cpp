//===- ClockSync.cpp - align the ranks' clocks at rendezvous --------------===//

#include "ClockSync.h"

#include <limits>

using namespace rtxrt;
using namespace rtxrt::program;

ClockOffset
rtxrt::program::measureClockOffset(Communicator &comm,
                                   const std::vector<int64_t> &world,
                                   int64_t rank, int rounds) {
  if (world.size() < 2)
    return ClockOffset{};
  // Each round: this rank's [enter, exit] of one all-gather.
  Tensor brackets({static_cast<int64_t>(rounds), 2}, DType::I64);
  Tensor token({1}, DType::I64);
  int64_t *bracket = brackets.data<int64_t>();
  for (int i = 0; i < rounds; ++i) {
    int64_t enter = Tracer::now();
    comm.exchange(world, token, "the clock alignment of the trace");
    int64_t exit = Tracer::now();
    bracket[2 * i] = enter;
    bracket[2 * i + 1] = exit;
  }
  std::vector<Tensor> all =
      comm.exchange(world, brackets, "the clock alignment of the trace");
  const int64_t *mine = all[rank].data<int64_t>();
  const int64_t *zero = all[0].data<int64_t>();
  ClockOffset best;
  best.errorUs = std::numeric_limits<double>::infinity();
  best.rounds = rounds;
  for (int i = 0; i < rounds; ++i) {
    double error = 0.5 *
                   double((mine[2 * i + 1] - mine[2 * i]) +
                          (zero[2 * i + 1] - zero[2 * i])) /
                   1000.0;
    if (error < best.errorUs) {
      best.errorUs = error;
      best.offsetUs = (0.5 * double(mine[2 * i] + mine[2 * i + 1]) -
                       0.5 * double(zero[2 * i] + zero[2 * i + 1])) /
                      1000.0;
    }
  }
  if (rank == 0) // the reference itself
    best.offsetUs = best.errorUs = 0;
  return best;
}
