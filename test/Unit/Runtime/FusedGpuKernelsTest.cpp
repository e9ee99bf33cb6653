//===- FusedGpuKernelsTest.cpp - fused GPU bodies against the CPU ---------===//
//
// The portable bodies of the fused ops (runtime/lib/gpu/Fused.cu), run by the
// host emulation, against the CPU kernels (runtime/lib/kernels/Fused.cpp,
// themselves equal to the unfused kernels: FusedKernelsTest). Odd widths,
// one row, ignored labels, large logits, bf16.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/device/Gpu.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

Tensor dev(const Tensor &t) { return gpu::toDevice(t); }

std::vector<Tensor> devs(const std::vector<Tensor> &ts) {
  std::vector<Tensor> out;
  for (const Tensor &t : ts)
    out.push_back(dev(t));
  return out;
}

void expectSame(const Tensor &gpuResult, const Tensor &cpuResult, double tol,
                const std::string &what) {
  ASSERT_TRUE(gpuResult.onGpu()) << what;
  Tensor host = gpu::toHost(gpuResult);
  ASSERT_EQ(host.shape(), cpuResult.shape()) << what;
  ASSERT_EQ(host.dtype(), cpuResult.dtype()) << what;
  EXPECT_LE(relNorm(toDoubles(host), toDoubles(cpuResult)), tol) << what;
}

} // namespace

TEST(FusedGpuKernelsTest, AddNormMatchesTheCpu) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (Shape shape : {Shape{1, 7}, Shape{3, 37}, Shape{2, 2, 769}}) {
      int64_t d = shape.back();
      Tensor x = randomTensor(shape, dtype, 1, -4, 4);
      Tensor r = randomTensor(shape, dtype, 2, -4, 4);
      Tensor g = randomTensor({d}, dtype, 3), b = randomTensor({d}, dtype, 4);
      std::string what =
          std::string(dtypeName(dtype)) + " " + shapeToString(shape);
      std::vector<Tensor> cpu = addLayerNorm(x, r, g, b, 1e-5);
      std::vector<Tensor> gpu =
          gpu::addLayerNorm(dev(x), dev(r), dev(g), dev(b), 1e-5);
      expectSame(gpu[0], cpu[0], 0.0, "sum, " + what);
      expectSame(gpu[1], cpu[1], 1e-6, "layernorm, " + what);
      cpu = addRmsNorm(x, r, g, 1e-6);
      gpu = gpu::addRmsNorm(dev(x), dev(r), dev(g), 1e-6);
      expectSame(gpu[0], cpu[0], 0.0, "rms sum, " + what);
      expectSame(gpu[1], cpu[1], 1e-6, "rmsnorm, " + what);
    }
}

TEST(FusedGpuKernelsTest, CrossEntropyWithGradMatchesTheCpu) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (bool ignore : {false, true}) {
      Tensor logits = randomTensor({5, 1031}, dtype, 7, -60, 60);
      Tensor labels({5}, DType::I32);
      for (int64_t t = 0; t < 5; ++t)
        labels.setFromDouble(t,
                             ignore && t % 2 ? -1.0 : double(t * 197 % 1031));
      Tensor dloss = Tensor::scalar(1.0, DType::F32);
      std::vector<Tensor> cpu =
          crossEntropyWithGrad(logits, labels, dloss, ignore, -1);
      std::vector<Tensor> gpu = gpu::crossEntropyWithGrad(
          dev(logits), dev(labels), dev(dloss), ignore, -1);
      std::string what =
          std::string(dtypeName(dtype)) + (ignore ? ", some ignored" : "");
      expectSame(gpu[0], cpu[0], 1e-6, "loss, " + what);
      expectSame(gpu[1], cpu[1], 1e-6, "dlogits, " + what);
    }
  // A label outside the vocabulary: the CPU kernel's message.
  Tensor logits = randomTensor({2, 5}, DType::F32, 1);
  Tensor bad = Tensor::fromVector(std::vector<int32_t>{0, 5}, {2});
  EXPECT_THROW(gpu::crossEntropyWithGrad(dev(logits), dev(bad),
                                         dev(Tensor::scalar(1.0, DType::F32)),
                                         false, 0),
               Error);
}

TEST(FusedGpuKernelsTest, MultiAdamWMatchesTheCpu) {
  for (DType paramType : {DType::F32, DType::BF16}) {
    std::vector<Tensor> params, grads, m, v;
    std::vector<Shape> shapes = {{37, 7}, {1}, {769}, {4099}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      unsigned s = static_cast<unsigned>(10 * i);
      params.push_back(randomTensor(shapes[i], paramType, s + 1));
      grads.push_back(randomTensor(shapes[i], DType::F32, s + 2));
      m.push_back(randomTensor(shapes[i], DType::F32, s + 3, -0.1, 0.1));
      v.push_back(randomTensor(shapes[i], DType::F32, s + 4, 0.0, 0.01));
    }
    // Step 5 of a warm-up over 2 and a decay to step 9: mid-cosine.
    Tensor step = Tensor::scalar(5.0, DType::F32);
    std::vector<Tensor> cpu = multiAdamwUpdate(
        params, grads, m, v, step, 1e-3, 0.9, 0.95, 1e-8, 0.1, 2, 9, 1e-4);
    std::vector<Tensor> gpu = gpu::multiAdamwUpdate(
        devs(params), devs(grads), devs(m), devs(v), dev(step), 1e-3, 0.9, 0.95,
        1e-8, 0.1, 2, 9, 1e-4);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
      expectSame(gpu[i], cpu[i], 1e-6,
                 std::string(dtypeName(paramType)) + " result " +
                     std::to_string(i));
  }
}

TEST(FusedGpuKernelsTest, SumSquaresMatchesTheCpu) {
  std::vector<Tensor> inputs = {randomTensor({70001}, DType::F32, 1, -3, 3),
                                randomTensor({37, 7}, DType::BF16, 2, -3, 3),
                                randomTensor({0}, DType::F32, 3),
                                randomTensor({1}, DType::F32, 4)};
  expectSame(gpu::sumSquares(devs(inputs)), sumSquares(inputs), 0.0,
             "sum of squares");
}
