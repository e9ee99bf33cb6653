//===- TestUtil.h - helpers for the librtxrt unit tests ---------*- C++ -*-===//
//
// Random inputs come from std::mt19937, not from rtxrt's own generator, and
// references are computed in double by the tests themselves, so a kernel is
// never checked against itself.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_TEST_UNIT_RUNTIME_TESTUTIL_H
#define RTXRT_TEST_UNIT_RUNTIME_TESTUTIL_H

#include "rtxrt/core/Tensor.h"
#include "rtxrt/kernels/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace rtxrt {
namespace test {

/// Uniform values in [lo, hi), rounded to `dtype` (so the double reference
/// sees exactly what the kernel sees).
inline Tensor randomTensor(const Shape &shape, DType dtype, unsigned seed,
                           double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setFromDouble(i, dist(gen));
  return t;
}

inline std::vector<double> toDoubles(const Tensor &t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = t.getAsDouble(i);
  return v;
}

/// ||actual - expected|| / ||expected||; infinity when anything is NaN or
/// the sizes differ. (When expected is all zeros, the absolute norm.)
inline double relNorm(const std::vector<double> &actual,
                      const std::vector<double> &expected) {
  if (actual.size() != expected.size())
    return std::numeric_limits<double>::infinity();
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(actual[i]) || std::isnan(expected[i]))
      return std::numeric_limits<double>::infinity();
    double d = actual[i] - expected[i];
    diff += d * d;
    norm += expected[i] * expected[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// The design's forward tolerances: f32 1e-5, bf16 1e-2; f16 has 3 more
/// mantissa bits than bf16; f64 is checked far tighter than f32.
inline double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 1e-12;
  case DType::BF16:
    return 1e-2;
  case DType::F16:
    return 2e-3;
  default:
    return 1e-5;
  }
}

/// Expects `actual` to have `shape` and to match `expected` within the
/// tolerance of its dtype.
inline void expectClose(const Tensor &actual, const Shape &shape,
                        const std::vector<double> &expected,
                        double tol = -1.0) {
  ASSERT_EQ(shapeToString(actual.shape()), shapeToString(shape));
  if (tol < 0)
    tol = tolerance(actual.dtype());
  double err = relNorm(toDoubles(actual), expected);
  EXPECT_LE(err, tol) << "relative error of a " << dtypeName(actual.dtype())
                      << " result " << shapeToString(shape);
}

/// Bitwise equality of two tensors (dtype, shape and bytes).
inline bool sameBits(const Tensor &a, const Tensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

/// Runs `f` and expects an rtxrt::Error whose message contains every one of
/// `needles`.
template <typename F>
void expectError(F &&f, const std::vector<std::string> &needles) {
  try {
    f();
    ADD_FAILURE() << "expected rtxrt::Error";
  } catch (const Error &e) {
    std::string msg = e.what();
    for (const std::string &n : needles)
      EXPECT_NE(msg.find(n), std::string::npos)
          << "message '" << msg << "' lacks '" << n << "'";
  }
}

/// The float dtypes every float kernel accepts, with a printable name.
inline std::string dtypeParamName(const testing::TestParamInfo<DType> &info) {
  return dtypeName(info.param);
}

/// A test with a folder of its own under gtest's TempDir(), removed with
/// the files made in it (each path() records one).
class ScratchDirTest : public testing::Test {
protected:
  void SetUp() override {
    dir = testing::TempDir() + "rtxrt_scratch_" + std::to_string(getpid());
    mkdir(dir.c_str(), 0755);
  }
  void TearDown() override {
    for (const std::string &p : created)
      std::remove(p.c_str());
    rmdir(dir.c_str());
  }
  /// DIR/name, removed after the test.
  std::string path(const std::string &name) {
    created.push_back(dir + "/" + name);
    return created.back();
  }
  std::string dir;
  std::vector<std::string> created;
};

/// The message of the rtxrt::Error that `f` throws; "" when it throws none.
inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace test
} // namespace rtxrt

#endif // RTXRT_TEST_UNIT_RUNTIME_TESTUTIL_H
