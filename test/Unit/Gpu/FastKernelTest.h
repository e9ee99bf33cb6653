//===- FastKernelTest.h - fast GPU kernels against portable ones -*- C++ -*-===//
//
// Each fast kernel (runtime/lib/gpu/fast) is run next to its portable
// reference (the one-index body the host emulation runs) on the same device
// inputs, and the two results are compared with the tolerance its math
// allows (design.md §5). Without a GPU the tests say SKIPPED.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TEST_UNIT_GPU_FASTKERNELTEST_H
#define RTX_TEST_UNIT_GPU_FASTKERNELTEST_H

#include "TestUtil.h"

#include "rtxrt/device/Gpu.h"

#include <functional>
#include <vector>

namespace rtxrt::test {

/// Skips the calling test unless a GPU is visible; selects GPU 0.
#define RTX_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::rtxrt::gpu::deviceAvailable())                                      \
      GTEST_SKIP() << "no GPU visible: the fast kernels are compared with "    \
                      "their portable references where one is";              \
    ::rtxrt::gpu::selectDevice(0);                                             \
  } while (false)

/// Runs `op` once with the portable kernels and once with the fast ones;
/// returns {portable, fast}, each result copied to the host. The fast path
/// is selected again afterwards.
inline std::pair<std::vector<Tensor>, std::vector<Tensor>>
runBothPaths(const std::function<std::vector<Tensor>()> &op) {
  auto hostResults = [&] {
    std::vector<Tensor> results = op();
    for (Tensor &t : results)
      t = gpu::toHost(t);
    return results;
  };
  gpu::setKernelPath(gpu::KernelPath::Portable);
  std::vector<Tensor> portable = hostResults();
  gpu::setKernelPath(gpu::KernelPath::Fast);
  std::vector<Tensor> fast = hostResults();
  return {std::move(portable), std::move(fast)};
}

/// Every result of the fast path within `tolerance` (relative norm) of the
/// portable one, with equal shapes and dtypes.
inline void expectFastMatchesPortable(
    const std::function<std::vector<Tensor>()> &op, double tolerance,
    const std::string &what) {
  auto [portable, fast] = runBothPaths(op);
  ASSERT_EQ(portable.size(), fast.size()) << what;
  for (size_t i = 0; i < fast.size(); ++i) {
    ASSERT_EQ(fast[i].shape(), portable[i].shape()) << what << " result " << i;
    ASSERT_EQ(fast[i].dtype(), portable[i].dtype()) << what << " result " << i;
    EXPECT_LE(relNorm(toDoubles(fast[i]), toDoubles(portable[i])), tolerance)
        << what << " result " << i << " shape "
        << shapeToString(fast[i].shape());
  }
}

} // namespace rtxrt::test

#endif // RTX_TEST_UNIT_GPU_FASTKERNELTEST_H
