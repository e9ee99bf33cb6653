//===- SimtRowsFastTest.cpp - RowsFastTest on the CPU ---------------------===//
//
// The comparison tests as written, with the GPU requirement lifted: the
// fast kernels run in the CPU simulation (SimtShim.h), the portable ones in
// the emulation. SimtTest checks that the fast kernels ran at all.
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#undef RTX_REQUIRE_GPU
#define RTX_REQUIRE_GPU()                                                      \
  do {                                                                         \
  } while (false)

#include "../RowsFastTest.cpp"

TEST(SimtTest, TheFastKernelsRanInTheSimulation) {
  long before = simLaunches;
  Tensor x = gpu::toDevice(randomTensor({3, 37}, DType::BF16, 1));
  runBothPaths([&] { return std::vector<Tensor>{gpu::softmax(x, -1)}; });
  EXPECT_GT(simLaunches, before);
}
