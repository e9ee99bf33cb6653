//===- OptimizerTest.cpp - adamw_update, sgd_update -----------------------===//
//
// The updates against closed-form loops written here in double, straight
// from the op descriptions (torch.optim.AdamW's documented algorithm).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "rtxrt/kernels/LrSchedule.h"

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

struct AdamWConfig {
  double lr, beta1, beta2, eps, weightDecay;
};

struct AdamWState {
  std::vector<double> p, m, v;
};

/// One AdamW step (1-based `step`) in double.
void refAdamWStep(AdamWState &s, const std::vector<double> &g, int step,
                  const AdamWConfig &c) {
  for (size_t i = 0; i < s.p.size(); ++i) {
    s.p[i] *= 1.0 - c.lr * c.weightDecay;
    s.m[i] = c.beta1 * s.m[i] + (1.0 - c.beta1) * g[i];
    s.v[i] = c.beta2 * s.v[i] + (1.0 - c.beta2) * g[i] * g[i];
    double mhat = s.m[i] / (1.0 - std::pow(c.beta1, step));
    double vhat = s.v[i] / (1.0 - std::pow(c.beta2, step));
    s.p[i] -= c.lr * mhat / (std::sqrt(vhat) + c.eps);
  }
}

struct AdamWCase {
  DType param, moments;
  double paramTol, momentTol;
};

void PrintTo(const AdamWCase &c, std::ostream *os) {
  *os << dtypeName(c.param) << " param, " << dtypeName(c.moments) << " moments";
}

class AdamWTest : public testing::TestWithParam<AdamWCase> {};

TEST_P(AdamWTest, ThreeStepsMatchClosedForm) {
  const AdamWCase &tc = GetParam();
  const AdamWConfig c = {0.05, 0.9, 0.999, 1e-8, 0.1};
  const Shape s = {7, 13};
  Tensor p = randomTensor(s, tc.param, 1);
  Tensor m(s, tc.moments), v(s, tc.moments);
  AdamWState ref = {toDoubles(p), toDoubles(m), toDoubles(v)};
  std::vector<double> initial = ref.p;
  for (int step = 1; step <= 3; ++step) {
    Tensor g = randomTensor(s, tc.moments, 10 + step, -2, 2);
    std::vector<Tensor> out =
        adamwUpdate(p, g, m, v, Tensor::scalar(step, DType::F32), c.lr, c.beta1,
                    c.beta2, c.eps, c.weightDecay);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].dtype(), tc.param);
    EXPECT_EQ(out[1].dtype(), tc.moments);
    EXPECT_EQ(out[2].dtype(), tc.moments);
    p = out[0];
    m = out[1];
    v = out[2];
    refAdamWStep(ref, toDoubles(g), step, c);
  }
  expectClose(p, s, ref.p, tc.paramTol);
  expectClose(m, s, ref.m, tc.momentTol);
  expectClose(v, s, ref.v, tc.momentTol);
  // The parameters moved far more than the tolerance: the check can fail.
  EXPECT_GT(relNorm(initial, ref.p), 10 * tc.paramTol);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, AdamWTest,
    testing::Values(AdamWCase{DType::F64, DType::F64, 1e-13, 1e-13},
                    AdamWCase{DType::F32, DType::F32, 1e-6, 1e-6},
                    AdamWCase{DType::F32, DType::F64, 1e-6, 1e-13},
                    AdamWCase{DType::BF16, DType::F32, 1e-2, 1e-6},
                    AdamWCase{DType::F16, DType::F32, 2e-3, 1e-6}),
    [](const testing::TestParamInfo<AdamWCase> &info) {
      return std::string(dtypeName(info.param.param)) + "Param" +
             dtypeName(info.param.moments) + "Moments";
    });

TEST(AdamW, WeightDecayIsDecoupled) {
  // A zero gradient leaves the moments at zero and the Adam step at zero:
  // only the decoupled decay p * (1 - lr * wd) remains.
  Tensor p = randomTensor({5, 3}, DType::F64, 2);
  Tensor zero({5, 3}, DType::F64);
  std::vector<Tensor> out =
      adamwUpdate(p, zero, zero, zero, Tensor::scalar(4, DType::F32), 0.1, 0.9,
                  0.999, 1e-8, 2.0);
  std::vector<double> expected = toDoubles(p);
  for (double &x : expected)
    x *= 0.8;
  expectClose(out[0], {5, 3}, expected, 1e-15);
  EXPECT_EQ(toDoubles(out[1]), std::vector<double>(15, 0.0));
  EXPECT_EQ(toDoubles(out[2]), std::vector<double>(15, 0.0));
}

TEST(AdamW, ScheduleWarmsUpThenDecaysToItsFloor) {
  // lr 0.1, warm-up 4 steps, cosine to 0.02 at step 10: values by hand.
  const LrSchedule s{0.1, 4, 10, 0.02};
  EXPECT_DOUBLE_EQ(s.at(1), 0.025);
  EXPECT_DOUBLE_EQ(s.at(4), 0.1); // the peak, at the last warm-up step
  EXPECT_DOUBLE_EQ(s.at(7), 0.02 + 0.5 * 0.08); // half way: cos(pi/2) = 0
  EXPECT_DOUBLE_EQ(s.at(10), 0.02);
  EXPECT_DOUBLE_EQ(s.at(11), 0.02);
  EXPECT_DOUBLE_EQ(s.at(1e6), 0.02);
  // Monotone after the peak.
  for (int t = 5; t <= 10; ++t)
    EXPECT_LT(s.at(t), s.at(t - 1)) << t;
  // A warm-up alone stays at lr; no schedule is lr itself, bit for bit.
  EXPECT_EQ(LrSchedule({0.1, 4, 0, 0.0}).at(5), 0.1);
  EXPECT_EQ(LrSchedule({0.1, 4, 0, 0.0}).at(2), 0.05);
  EXPECT_EQ(LrSchedule({1e-3, 0, 0, 0.0}).at(123), 1e-3);
  // A decay without warm-up starts from lr at step 0.
  EXPECT_DOUBLE_EQ(LrSchedule({0.1, 0, 4, 0.0}).at(2), 0.05);
}

TEST(AdamW, WeightDecayFollowsTheScheduledRate) {
  // Zero gradients: p * (1 - lr_t * wd), lr_t from the schedule of the step.
  Tensor p = randomTensor({5, 3}, DType::F64, 2);
  Tensor zero({5, 3}, DType::F64);
  for (auto [step, factor] : {std::pair<double, double>{2, 1 - 0.05 * 2.0},
                              {7, 1 - 0.06 * 2.0},
                              {12, 1 - 0.02 * 2.0}}) {
    std::vector<Tensor> out =
        adamwUpdate(p, zero, zero, zero, Tensor::scalar(step, DType::F32), 0.1,
                    0.9, 0.999, 1e-8, 2.0, 4, 10, 0.02);
    std::vector<double> expected = toDoubles(p);
    for (double &x : expected)
      x *= factor;
    expectClose(out[0], {5, 3}, expected, 1e-15);
  }
}

TEST(AdamW, ScheduleErrors) {
  Tensor p({7}, DType::F32);
  Tensor step = Tensor::scalar(1, DType::F32);
  auto update = [&](int64_t warmup, int64_t decay, double minLr) {
    adamwUpdate(p, p, p, p, step, 1e-3, 0.9, 0.999, 1e-8, 0, warmup, decay,
                minLr);
  };
  expectError([&] { update(-1, 0, 0); }, {"rtx.adamw_update", "warmup_steps"});
  expectError([&] { update(5, 5, 0); }, {"rtx.adamw_update", "decay_steps"});
  expectError([&] { update(0, 5, 1e-2); }, {"rtx.adamw_update", "min_lr"});
  expectError([&] { update(5, 0, 1e-4); },
              {"rtx.adamw_update", "min_lr", "needs decay_steps"});
}

TEST(AdamW, FirstStepMovesByLrTimesSign) {
  // Step 1 from zero moments with eps = 0: mhat = g, vhat = g^2.
  Tensor p = randomTensor({13}, DType::F64, 3);
  Tensor g = randomTensor({13}, DType::F64, 4);
  Tensor zero({13}, DType::F64);
  std::vector<Tensor> out = adamwUpdate(
      p, g, zero, zero, Tensor::scalar(1, DType::F32), 0.01, 0.9, 0.99, 0, 0);
  for (int64_t i = 0; i < 13; ++i)
    EXPECT_NEAR(out[0].getAsDouble(i),
                p.getAsDouble(i) - 0.01 * (g.getAsDouble(i) > 0 ? 1 : -1),
                1e-15);
}

TEST(AdamW, Errors) {
  Tensor p({7, 13}, DType::F32), g({7, 13}, DType::F32);
  Tensor step = Tensor::scalar(1, DType::F32);
  expectError(
      [&] {
        adamwUpdate(p, g, g, g, Tensor::scalar(0, DType::F32), 1e-3, 0.9, 0.999,
                    1e-8, 0);
      },
      {"rtx.adamw_update", "step 0", "1-based"});
  expectError(
      [&] {
        adamwUpdate(p, g, g, g, Tensor({1}, DType::F32), 1e-3, 0.9, 0.999, 1e-8,
                    0);
      },
      {"rtx.adamw_update", "step", "scalar"});
  expectError(
      [&] {
        adamwUpdate(p, g, Tensor({7, 13}, DType::F64), g, step, 1e-3, 0.9,
                    0.999, 1e-8, 0);
      },
      {"rtx.adamw_update", "exp_avg", "f64"});
  expectError(
      [&] {
        adamwUpdate(p, Tensor({13, 7}, DType::F32), g, g, step, 1e-3, 0.9,
                    0.999, 1e-8, 0);
      },
      {"rtx.adamw_update", "[13, 7]"});
  expectError([&] { adamwUpdate(p, g, g, g, step, 1e-3, 1.0, 0.999, 1e-8, 0); },
              {"rtx.adamw_update", "beta1"});
}

TEST(SGD, MatchesClosedForm) {
  const Shape s = {7, 13};
  const double lr = 0.1, wd = 0.05;
  for (auto [param, grad, tol] :
       {std::tuple<DType, DType, double>{DType::F64, DType::F64, 1e-15},
        {DType::F32, DType::F32, 1e-6},
        {DType::BF16, DType::F32, 1e-2}}) {
    SCOPED_TRACE(std::string(dtypeName(param)) + " " + dtypeName(grad));
    Tensor p = randomTensor(s, param, 5);
    Tensor g = randomTensor(s, grad, 6, -3, 3);
    std::vector<double> pv = toDoubles(p), gv = toDoubles(g), ref(pv.size());
    for (size_t i = 0; i < pv.size(); ++i)
      ref[i] = pv[i] - lr * (gv[i] + wd * pv[i]);
    Tensor out = sgdUpdate(p, g, lr, wd);
    EXPECT_EQ(out.dtype(), param);
    expectClose(out, s, ref, tol);
    EXPECT_GT(relNorm(pv, ref), 10 * tol);
  }
  expectError(
      [&] {
        sgdUpdate(Tensor({3}, DType::F32), Tensor({4}, DType::F32), 0.1, 0);
      },
      {"rtx.sgd_update", "[3]", "[4]"});
  expectError(
      [&] {
        sgdUpdate(Tensor({3}, DType::F32), Tensor({3}, DType::F32), -0.1, 0);
      },
      {"rtx.sgd_update", "lr"});
}

} // namespace
