//===- GpuKernelsTest.cpp - the GPU kernels against the CPU kernels -------===//
//
// Runs every kernel of rtxrt/device/Gpu.h in the host emulation of the GPU runtime
// (librtxrt_gpu_emulation: the same sources as the CUDA build, each kernel
// body run as a loop) and compares it with the CPU kernel of the same op,
// which the other unit tests check against double-precision references.
// Shapes are odd on purpose (7, 13, 37) so that no stride or tail is hidden.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/core/Block.h"
#include "rtxrt/device/Gpu.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

Tensor dev(const Tensor &t) { return gpu::toDevice(t); }

/// The GPU result, copied back, against the CPU result.
void expectSame(const Tensor &gpuResult, const Tensor &cpuResult,
                double tol = 1e-5) {
  ASSERT_TRUE(gpuResult.onGpu());
  Tensor host = gpu::toHost(gpuResult);
  ASSERT_EQ(host.shape(), cpuResult.shape());
  ASSERT_EQ(host.dtype(), cpuResult.dtype());
  EXPECT_LE(relNorm(toDoubles(host), toDoubles(cpuResult)), tol)
      << "shape " << shapeToString(host.shape());
}

Tensor ints(const Shape &shape, int64_t bound, unsigned seed,
            DType dtype = DType::I32) {
  std::mt19937 gen(seed);
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setFromDouble(i, static_cast<double>(gen() % bound));
  return t;
}

} // namespace

TEST(GpuKernelsTest, HostTensorsAreRefusedWithAMessage) {
  Tensor x = randomTensor({3}, DType::F32, 1);
  EXPECT_THROW(gpu::unary(UnaryKind::Exp, x), Error);
  Tensor g = dev(x);
  try {
    (void)g.data<float>();
    FAIL() << "host access to a GPU tensor must throw";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("GPU memory"), std::string::npos);
  }
}

TEST(GpuKernelsTest, CopiesRoundTrip) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I64}) {
    Tensor x = randomTensor({5, 7}, dtype, 2, -5, 5);
    expectSame(dev(x), x, 0.0);
  }
}

TEST(GpuKernelsTest, GemmEpilogues) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    double tol = dtype == DType::F32 ? 1e-5 : 1e-2;
    Tensor x = randomTensor({2, 7, 13}, dtype, 31);
    Tensor w = randomTensor({37, 13}, dtype, 32);
    Tensor b = randomTensor({37}, dtype, 33);
    Tensor dy = randomTensor({14, 37}, dtype, 34);
    Tensor x2 = randomTensor({14, 13}, dtype, 35);
    Tensor pre = randomTensor({14, 13}, dtype, 36, -3, 3);
    struct Case {
      GemmEpilogue epilogue;
      Tensor lhs, rhs;
      bool ta, tb;
      Tensor bias, pre;
    };
    std::vector<Case> cases;
    for (GemmEpilogue e :
         {GemmEpilogue::BiasGelu, GemmEpilogue::BiasGeluTanh,
          GemmEpilogue::BiasGeluAux, GemmEpilogue::BiasGeluTanhAux})
      cases.push_back({e, x, w, false, true, b, Tensor()});
    cases.push_back(
        {GemmEpilogue::BiasGrad, dy, x2, true, false, Tensor(), Tensor()});
    for (GemmEpilogue e : {GemmEpilogue::DGelu, GemmEpilogue::DGeluTanh})
      cases.push_back({e, dy, w, false, false, Tensor(), pre});
    for (const Case &c : cases) {
      auto devOrNone = [](const Tensor &t) {
        return t.defined() ? dev(t) : Tensor();
      };
      std::vector<Tensor> cpu =
          gemmEpilogue(c.epilogue, c.lhs, c.rhs, c.ta, c.tb, c.bias, c.pre);
      std::vector<Tensor> gpu =
          gpu::gemmEpilogue(c.epilogue, dev(c.lhs), dev(c.rhs), c.ta, c.tb,
                            devOrNone(c.bias), devOrNone(c.pre));
      ASSERT_EQ(gpu.size(), cpu.size()) << enumeratorName(c.epilogue);
      for (size_t i = 0; i < cpu.size(); ++i) {
        SCOPED_TRACE(std::string(enumeratorName(c.epilogue)) + " result " +
                     std::to_string(i) + " " + dtypeName(dtype));
        expectSame(gpu[i], cpu[i], tol);
      }
    }
  }
}

TEST(GpuKernelsTest, Contractions) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randomTensor(ta ? Shape{13, 7} : Shape{7, 13}, DType::F32, 3);
      Tensor b = randomTensor(tb ? Shape{5, 13} : Shape{13, 5}, DType::F32, 4);
      expectSame(gpu::matmul(dev(a), dev(b), ta, tb), matmul(a, b, ta, tb));
      Tensor ba = randomTensor(ta ? Shape{2, 3, 13, 7} : Shape{2, 3, 7, 13},
                               DType::F32, 5);
      Tensor bb = randomTensor(tb ? Shape{2, 3, 5, 13} : Shape{2, 3, 13, 5},
                               DType::F32, 6);
      expectSame(gpu::batchMatmul(dev(ba), dev(bb), ta, tb),
                 batchMatmul(ba, bb, ta, tb));
    }
  Tensor x = randomTensor({2, 7, 13}, DType::F32, 7);
  Tensor w = randomTensor({5, 13}, DType::F32, 8);
  Tensor bias = randomTensor({5}, DType::F32, 9);
  expectSame(gpu::linear(dev(x), dev(w), dev(bias)), linear(x, w, bias));
  expectSame(gpu::linear(dev(x), dev(w), Tensor()), linear(x, w, Tensor()));
  Tensor xd = randomTensor({4, 6}, DType::F64, 10);
  Tensor wd = randomTensor({3, 6}, DType::F64, 11);
  expectSame(gpu::linear(dev(xd), dev(wd), Tensor()), linear(xd, wd, Tensor()),
             1e-12);
}

TEST(GpuKernelsTest, Elementwise) {
  Tensor x = randomTensor({7, 13}, DType::F32, 12, 0.1, 2.0);
  Tensor y = randomTensor({7, 13}, DType::F32, 13, -2.0, 2.0);
  for (int k = 0; k <= static_cast<int>(UnaryKind::GeluTanh); ++k) {
    auto kind = static_cast<UnaryKind>(k);
    expectSame(gpu::unary(kind, dev(x)), unary(kind, x));
  }
  for (int k = 0; k <= static_cast<int>(BinaryKind::Minimum); ++k) {
    auto kind = static_cast<BinaryKind>(k);
    expectSame(gpu::binary(kind, dev(x), dev(y)), binary(kind, x, y));
  }
  for (int k = 0; k <= static_cast<int>(CompareKind::GE); ++k) {
    auto kind = static_cast<CompareKind>(k);
    expectSame(gpu::compare(kind, dev(x), dev(y)), compare(kind, x, y), 0.0);
  }
  Tensor cond = compare(CompareKind::GT, x, y);
  expectSame(gpu::where(dev(cond), dev(x), dev(y)), where(cond, x, y), 0.0);
  expectSame(gpu::maskedFill(dev(x), dev(cond), -1e9),
             maskedFill(x, cond, -1e9), 0.0);
  Tensor bx = x.to(DType::BF16);
  expectSame(gpu::unary(UnaryKind::Gelu, dev(bx)), unary(UnaryKind::Gelu, bx),
             1e-2);
  Tensor i32 = ints({4, 5}, 100, 14), i32b = ints({4, 5}, 100, 15);
  expectSame(gpu::binary(BinaryKind::Add, dev(i32), dev(i32b)),
             binary(BinaryKind::Add, i32, i32b), 0.0);
  for (DType to : {DType::F64, DType::BF16, DType::F16, DType::I32, DType::I1})
    expectSame(gpu::convert(dev(y), to), convert(y, to), 0.0);
  for (int f = 0; f <= static_cast<int>(UnaryFn::GeluTanh); ++f) {
    auto fn = static_cast<UnaryFn>(f);
    expectSame(gpu::unaryGrad(fn, dev(x), dev(y)), unaryGrad(fn, x, y));
  }
}

/// The elementwise bodies read bf16/f16 storage directly (no f32 copy):
/// each result has exactly the bits of the f32 computation rounded once,
/// which is what converting to f32, running the op and converting back
/// gives, and matches the CPU kernel within the dtype's tolerance.
TEST(GpuKernelsTest, HalfPrecisionElementwiseReadsItsStorageDirectly) {
  auto viaF32 = [](DType dtype, auto op, std::vector<Tensor> operands) {
    for (Tensor &t : operands)
      t = gpu::convert(t, DType::F32);
    return gpu::toHost(gpu::convert(op(operands), dtype));
  };
  auto expectBits = [](const Tensor &actual, const Tensor &expected,
                       const std::string &what) {
    EXPECT_TRUE(sameBits(gpu::toHost(actual), expected)) << what;
  };
  for (DType dtype : {DType::BF16, DType::F16}) {
    std::string name = dtypeName(dtype);
    Tensor x = randomTensor({7, 37}, dtype, 60, 0.1, 2.0);
    Tensor y = randomTensor({7, 37}, dtype, 61, -2.0, 2.0);
    Tensor dx = dev(x), dy = dev(y);
    for (int k = 0; k <= static_cast<int>(UnaryKind::GeluTanh); ++k) {
      auto kind = static_cast<UnaryKind>(k);
      Tensor result = gpu::unary(kind, dx);
      expectBits(
          result,
          viaF32(dtype, [&](auto v) { return gpu::unary(kind, v[0]); }, {dx}),
          name + " unary " + std::to_string(k));
      expectSame(result, unary(kind, x), tolerance(dtype));
    }
    for (int k = 0; k <= static_cast<int>(BinaryKind::Minimum); ++k) {
      auto kind = static_cast<BinaryKind>(k);
      Tensor result = gpu::binary(kind, dx, dy);
      expectBits(result,
                 viaF32(dtype,
                        [&](auto v) { return gpu::binary(kind, v[0], v[1]); },
                        {dx, dy}),
                 name + " binary " + std::to_string(k));
      expectSame(result, binary(kind, x, y), tolerance(dtype));
    }
    for (int f = 0; f <= static_cast<int>(UnaryFn::GeluTanh); ++f) {
      auto fn = static_cast<UnaryFn>(f);
      Tensor result = gpu::unaryGrad(fn, dx, dy);
      expectBits(result,
                 viaF32(dtype,
                        [&](auto v) { return gpu::unaryGrad(fn, v[0], v[1]); },
                        {dx, dy}),
                 name + " unary_grad " + std::to_string(f));
      expectSame(result, unaryGrad(fn, x, y), tolerance(dtype));
    }
    expectBits(
        gpu::swiglu(dx, dy),
        viaF32(dtype, [](auto v) { return gpu::swiglu(v[0], v[1]); }, {dx, dy}),
        name + " swiglu");
    expectBits(
        gpu::dropout(dx, 0.3, 42),
        viaF32(dtype, [](auto v) { return gpu::dropout(v[0], 0.3, 42); }, {dx}),
        name + " dropout");
    expectSame(gpu::dropout(dx, 0.3, 42), dropout(x, 0.3, 42), 0.0);
  }
}

TEST(GpuKernelsTest, SwiGLUIsSiluTimesUpOnBothDevices) {
  Tensor g = randomTensor({5, 12}, DType::F32, 40, -4.0, 4.0);
  Tensor u = randomTensor({5, 12}, DType::F32, 41, -2.0, 2.0);
  // One element definition (ElementMath.h): the devices agree bit for bit.
  expectSame(gpu::swiglu(dev(g), dev(u)), swiglu(g, u), 0.0);
  // The fused op is the composition it replaces, to rounding.
  EXPECT_LE(
      relNorm(toDoubles(swiglu(g, u)),
              toDoubles(binary(BinaryKind::Mul, unary(UnaryKind::Silu, g), u))),
      1e-6);
  Tensor g64 = g.to(DType::F64), u64 = u.to(DType::F64);
  expectSame(gpu::swiglu(dev(g64), dev(u64)), swiglu(g64, u64), 0.0);
  Tensor bg = g.to(DType::BF16), bu = u.to(DType::BF16);
  expectSame(gpu::swiglu(dev(bg), dev(bu)), swiglu(bg, bu), 0.0);
  EXPECT_THROW(swiglu(g, randomTensor({5, 11}, DType::F32, 42)), Error);
}

TEST(GpuKernelsTest, DropoutDrawsTheCpuMaskForEveryShard) {
  Tensor x = randomTensor({6, 10}, DType::F32, 16);
  expectSame(gpu::dropout(dev(x), 0.3, 42), dropout(x, 0.3, 42), 0.0);
  // A [3, 5] shard at (3, 5) of the [6, 10] tensor draws the global mask.
  Tensor shard = sliceBlock(x, {3, 5}, {3, 5});
  expectSame(gpu::dropout(dev(shard), 0.3, 42, {6, 10}, {3, 5}),
             dropout(shard, 0.3, 42, {6, 10}, {3, 5}), 0.0);
  expectSame(gpu::dropout(dev(x), 0.0, 42), x, 0.0);
}

TEST(GpuKernelsTest, NormalisationSoftmaxRope) {
  Tensor x = randomTensor({3, 5, 37}, DType::F32, 17, -3, 3);
  Tensor g = randomTensor({37}, DType::F32, 18);
  Tensor b = randomTensor({37}, DType::F32, 19);
  Tensor dy = randomTensor({3, 5, 37}, DType::F32, 20);
  expectSame(gpu::layerNorm(dev(x), dev(g), dev(b), 1e-5),
             layerNorm(x, g, b, 1e-5));
  expectSame(gpu::layerNorm(dev(x), dev(g), Tensor(), 1e-5),
             layerNorm(x, g, Tensor(), 1e-5));
  expectSame(gpu::rmsNorm(dev(x), dev(g), 1e-6), rmsNorm(x, g, 1e-6));
  std::vector<Tensor> lg = gpu::layerNormGrad(dev(x), dev(g), dev(dy), 1e-5);
  std::vector<Tensor> lc = layerNormGrad(x, g, dy, 1e-5);
  ASSERT_EQ(lg.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    expectSame(lg[i], lc[i], 1e-4);
  std::vector<Tensor> rg = gpu::rmsNormGrad(dev(x), dev(g), dev(dy), 1e-6);
  std::vector<Tensor> rc = rmsNormGrad(x, g, dy, 1e-6);
  ASSERT_EQ(rg.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    expectSame(rg[i], rc[i], 1e-4);
  for (int64_t dim : {0, 1, 2}) {
    expectSame(gpu::softmax(dev(x), dim), softmax(x, dim));
    Tensor y = softmax(x, dim);
    expectSame(gpu::softmaxGrad(dev(y), dev(dy), dim), softmaxGrad(y, dy, dim),
               1e-4);
  }
  Tensor q = randomTensor({2, 3, 7, 8}, DType::F32, 21);
  expectSame(gpu::rope(dev(q), 10000.0, 3), rope(q, 10000.0, 3));
  expectSame(gpu::ropeGrad(dev(q), 10000.0, 3), ropeGrad(q, 10000.0, 3));
}

TEST(GpuKernelsTest, AttentionAndItsGradientWithGroupedHeads) {
  for (bool causal : {false, true}) {
    Tensor q = randomTensor({2, 4, 7, 8}, DType::F32, 22);
    Tensor k = randomTensor({2, 2, 7, 8}, DType::F32, 23);
    Tensor v = randomTensor({2, 2, 7, 8}, DType::F32, 24);
    Tensor dout = randomTensor({2, 4, 7, 8}, DType::F32, 25);
    expectSame(gpu::attention(dev(q), dev(k), dev(v), causal, 0.35),
               attention(q, k, v, causal, 0.35));
    std::vector<Tensor> g =
        gpu::attentionGrad(dev(q), dev(k), dev(v), dev(dout), causal, 0.35);
    std::vector<Tensor> c = attentionGrad(q, k, v, dout, causal, 0.35);
    ASSERT_EQ(g.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      expectSame(g[i], c[i], 1e-4);
  }
}

TEST(GpuKernelsTest, AttentionGradRejectsAResultGradOfAnotherDtype) {
  // As on the CPU: the fast (flash) kernels read result_grad as q's dtype.
  Tensor q = randomTensor({1, 2, 5, 8}, DType::BF16, 29);
  Tensor dout = randomTensor({1, 2, 5, 8}, DType::F32, 30);
  expectError(
      [&] { gpu::attentionGrad(dev(q), dev(q), dev(q), dev(dout), true, 0.35); },
      {"rtx.attention_grad", "result_grad"});
  expectError([&] { attentionGrad(q, q, q, dout, true, 0.35); },
              {"rtx.attention_grad", "result_grad"});
}

TEST(GpuKernelsTest, EmbeddingAndCrossEntropy) {
  Tensor table = randomTensor({37, 6}, DType::F32, 26);
  Tensor ids = ints({3, 5}, 37, 27);
  expectSame(gpu::embedding(dev(table), dev(ids)), embedding(table, ids), 0.0);
  Tensor dy = randomTensor({3, 5, 6}, DType::F32, 28);
  expectSame(gpu::embeddingGrad(dev(ids), dev(dy), {37, 6}),
             embeddingGrad(ids, dy, {37, 6}));
  Tensor logits = randomTensor({3, 5, 37}, DType::F32, 29, -4, 4);
  Tensor labels = ints({3, 5}, 37, 30, DType::I64);
  labels.setFromDouble(4, -100);
  for (bool ignore : {false, true}) {
    Tensor lab = ignore ? labels : ints({3, 5}, 37, 31);
    expectSame(gpu::crossEntropy(dev(logits), dev(lab), ignore, -100),
               crossEntropy(logits, lab, ignore, -100));
    Tensor dloss = Tensor::scalar(0.7);
    expectSame(
        gpu::crossEntropyGrad(dev(logits), dev(lab), dev(dloss), ignore, -100),
        crossEntropyGrad(logits, lab, dloss, ignore, -100));
  }
}

TEST(GpuKernelsTest, AnIdOutsideTheVocabularyIsTheCpuError) {
  Tensor table = randomTensor({4, 2}, DType::F32, 32);
  Tensor ids = Tensor::fromVector(std::vector<int32_t>{1, 9, 2}, {3});
  std::string cpuMessage, gpuMessage;
  try {
    embedding(table, ids);
  } catch (const Error &e) {
    cpuMessage = e.what();
  }
  try {
    gpu::embedding(dev(table), dev(ids));
  } catch (const Error &e) {
    gpuMessage = e.what();
  }
  EXPECT_FALSE(cpuMessage.empty());
  EXPECT_EQ(gpuMessage, cpuMessage);
}

TEST(GpuKernelsTest, ShapeOps) {
  Tensor x = randomTensor({3, 4, 5}, DType::F32, 33);
  expectSame(gpu::reshape(dev(x), {12, 5}), reshape(x, {12, 5}), 0.0);
  expectSame(gpu::transpose(dev(x), {2, 0, 1}), transpose(x, {2, 0, 1}), 0.0);
  expectSame(gpu::slice(dev(x), {1, 0, 2}, {3, 3, 5}),
             slice(x, {1, 0, 2}, {3, 3, 5}), 0.0);
  std::vector<Tensor> gs = gpu::split(dev(x), 2, {1, 3, 1});
  std::vector<Tensor> cs = split(x, 2, {1, 3, 1});
  ASSERT_EQ(gs.size(), cs.size());
  for (size_t i = 0; i < gs.size(); ++i)
    expectSame(gs[i], cs[i], 0.0);
  Tensor y = randomTensor({3, 2, 5}, DType::F32, 34);
  expectSame(gpu::concat({dev(x), dev(y)}, 1), concat({x, y}, 1), 0.0);
  Tensor r = randomTensor({4, 1}, DType::F32, 35);
  expectSame(gpu::broadcast(dev(r), {1, 2}, {3, 4, 6}),
             broadcast(r, {1, 2}, {3, 4, 6}), 0.0);
  expectSame(gpu::pad(dev(x), {0, 1, 2}, {1, 0, 3}),
             pad(x, {0, 1, 2}, {1, 0, 3}), 0.0);
  for (int k = 0; k <= static_cast<int>(ReduceKind::Min); ++k) {
    auto kind = static_cast<ReduceKind>(k);
    for (bool keep : {false, true}) {
      expectSame(gpu::reduce(kind, dev(x), {0, 2}, keep),
                 reduce(kind, x, {0, 2}, keep));
      expectSame(gpu::reduce(kind, dev(x), {1}, keep),
                 reduce(kind, x, {1}, keep));
    }
  }
}

TEST(GpuKernelsTest, Optimizers) {
  Tensor p = randomTensor({7, 5}, DType::F32, 36);
  Tensor g = randomTensor({7, 5}, DType::F32, 37);
  Tensor m = randomTensor({7, 5}, DType::F32, 38);
  Tensor v = randomTensor({7, 5}, DType::F32, 39, 0.0, 1.0);
  Tensor step = Tensor::scalar(3.0);
  std::vector<Tensor> a = gpu::adamwUpdate(
      dev(p), dev(g), dev(m), dev(v), dev(step), 1e-3, 0.9, 0.999, 1e-8, 0.01);
  std::vector<Tensor> c =
      adamwUpdate(p, g, m, v, step, 1e-3, 0.9, 0.999, 1e-8, 0.01);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    expectSame(a[i], c[i], 1e-6);
  // With a schedule: the rate of step 3 of a warm-up over 8.
  a = gpu::adamwUpdate(dev(p), dev(g), dev(m), dev(v), dev(step), 1e-3, 0.9,
                       0.999, 1e-8, 0.01, 8, 20, 1e-4);
  c = adamwUpdate(p, g, m, v, step, 1e-3, 0.9, 0.999, 1e-8, 0.01, 8, 20, 1e-4);
  for (size_t i = 0; i < 3; ++i)
    expectSame(a[i], c[i], 1e-6);
  expectSame(gpu::sgdUpdate(dev(p), dev(g), 0.1, 0.01),
             sgdUpdate(p, g, 0.1, 0.01));
}

TEST(GpuKernelsTest, VocabularyShards) {
  // A vocabulary of 10 in shards [0, 4) and [4, 10) (uneven on purpose).
  Tensor table = randomTensor({6, 5}, DType::F32, 40);
  Tensor ids = ints({3, 4}, 10, 41);
  expectSame(gpu::embedding(dev(table), dev(ids), 4, 10),
             embedding(table, ids, 4, 10), 0.0);
  Tensor dy = randomTensor({3, 4, 5}, DType::F32, 42);
  expectSame(gpu::embeddingGrad(dev(ids), dev(dy), {6, 5}, 4, 10),
             embeddingGrad(ids, dy, {6, 5}, 4, 10));
  Tensor logits = randomTensor({3, 4, 6}, DType::F32, 43, -3, 3);
  Tensor labels = ints({3, 4}, 10, 44, DType::I64);
  labels.setFromDouble(5, -100);
  std::vector<Tensor> g =
      gpu::vocabLogitStats(dev(logits), dev(labels), 4, 10, true, -100);
  std::vector<Tensor> c = vocabLogitStats(logits, labels, 4, 10, true, -100);
  ASSERT_EQ(g.size(), 2u);
  expectSame(g[0], c[0], 0.0);
  expectSame(g[1], c[1], 0.0);
  Tensor sumExp = randomTensor({3, 4}, DType::F32, 45, 1.0, 5.0);
  expectSame(
      gpu::vocabCrossEntropy(g[0], dev(sumExp), g[1], dev(labels), true, -100),
      vocabCrossEntropy(c[0], sumExp, c[1], labels, true, -100));
  Tensor dloss = Tensor::scalar(0.5);
  expectSame(gpu::vocabCrossEntropyGrad(dev(logits), dev(labels), dev(dloss),
                                        g[0], dev(sumExp), 4, 10, true, -100),
             vocabCrossEntropyGrad(logits, labels, dloss, c[0], sumExp, 4, 10,
                                   true, -100));
}
