//===- KernelPathTest.cpp - the switch between fast and portable kernels -===//

#include "FastKernelTest.h"

using namespace rtxrt;
using namespace rtxrt::test;

TEST(KernelPathTest, TheSwitchSelectsFastKernelsInTheCudaBuild) {
  gpu::setKernelPath(gpu::KernelPath::Portable);
  EXPECT_EQ(gpu::kernelPath(), gpu::KernelPath::Portable);
  EXPECT_FALSE(gpu::useFastKernels());
  gpu::setKernelPath(gpu::KernelPath::Fast);
  EXPECT_TRUE(gpu::useFastKernels()); // librtxrt_cuda is the CUDA build
}

TEST(KernelPathTest, BothPathsRunOnTheGpu) {
  RTX_REQUIRE_GPU();
  Tensor x = randomTensor({7, 13}, DType::F32, 3);
  expectFastMatchesPortable(
      [&] { return std::vector<Tensor>{gpu::unary(UnaryKind::Exp, gpu::toDevice(x))}; },
      1e-6, "exp");
}
