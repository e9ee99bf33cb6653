//===- NpyTest.cpp - .npy read/write --------------------------------------===//

#include "rtxrt/core/Npy.h"

#include "TestUtil.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

/// A per-process scratch file that is removed afterwards.
class NpyTest : public testing::Test {
protected:
  std::string path(const std::string &name) {
    std::string p = testing::TempDir() + "rtxrt_npy_" +
                    std::to_string(getpid()) + "_" + name;
    created.push_back(p);
    return p;
  }
  void TearDown() override {
    for (const std::string &p : created)
      std::remove(p.c_str());
  }
  void writeBytes(const std::string &p, const std::string &bytes) {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<std::string> created;
};

std::string fixture(const std::string &name) {
  return std::string(RTXRT_TEST_INPUTS) + "/" + name;
}

TEST_F(NpyTest, RoundTripEveryDType) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I1,
                  DType::I32, DType::I64}) {
    Tensor t = randomTensor({7, 13}, d, 3, -100, 100);
    std::string p = path(std::string(dtypeName(d)) + ".npy");
    writeNpy(p, t);
    Tensor back = readNpy(p);
    // bf16 and f16 are written as f4 (exactly representable).
    DType expected = (d == DType::BF16 || d == DType::F16) ? DType::F32 : d;
    EXPECT_EQ(back.dtype(), expected) << dtypeName(d);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(toDoubles(back), toDoubles(t)) << dtypeName(d);
  }
}

TEST_F(NpyTest, RoundTripOddShapes) {
  for (Shape s :
       {Shape{}, Shape{1}, Shape{65}, Shape{0, 3}, Shape{2, 1, 3, 5}}) {
    Tensor t = randomTensor(s, DType::F32, 4);
    std::string p = path("shape.npy");
    writeNpy(p, t);
    Tensor back = readNpy(p);
    EXPECT_EQ(back.shape(), s) << shapeToString(s);
    EXPECT_TRUE(sameBits(back, t)) << shapeToString(s);
  }
}

TEST_F(NpyTest, LongHeaderUsesVersion2) {
  // A rank-23000 shape ("1, " each) needs a header longer than 65535 bytes.
  Shape s(23000, 1);
  Tensor t = randomTensor(s, DType::F32, 5);
  std::string p = path("v2.npy");
  writeNpy(p, t);
  std::ifstream in(p, std::ios::binary);
  char head[8];
  in.read(head, 8);
  EXPECT_EQ(head[6], 2);
  Tensor back = readNpy(p);
  EXPECT_EQ(back.shape(), s);
  EXPECT_TRUE(sameBits(back, t));
}

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  Tensor f4 = readNpy(fixture("numpy_f4_2x3.npy"));
  EXPECT_EQ(f4.dtype(), DType::F32);
  EXPECT_EQ(f4.shape(), (Shape{2, 3}));
  EXPECT_EQ(toDoubles(f4), (std::vector<double>{-1, -0.5, 0, 0.5, 1, 1.5}));

  Tensor f8 = readNpy(fixture("numpy_f8_scalar.npy"));
  EXPECT_EQ(f8.dtype(), DType::F64);
  EXPECT_EQ(f8.rank(), 0);
  EXPECT_EQ(f8.getAsDouble(0), 3.25);

  Tensor i8 = readNpy(fixture("numpy_i8_4.npy"));
  EXPECT_EQ(i8.dtype(), DType::I64);
  EXPECT_EQ(i8.data<int64_t>()[3], int64_t{1} << 40);
  EXPECT_EQ(i8.data<int64_t>()[0], -2);

  Tensor i4 = readNpy(fixture("numpy_i4_2x2.npy"));
  EXPECT_EQ(i4.dtype(), DType::I32);
  EXPECT_EQ(toDoubles(i4), (std::vector<double>{1, -2, 3, 2147483647}));

  Tensor b1 = readNpy(fixture("numpy_b1_3.npy"));
  EXPECT_EQ(b1.dtype(), DType::I1);
  EXPECT_EQ(toDoubles(b1), (std::vector<double>{1, 0, 1}));

  Tensor f2 = readNpy(fixture("numpy_f2_3.npy"));
  EXPECT_EQ(f2.dtype(), DType::F16);
  EXPECT_EQ(toDoubles(f2), (std::vector<double>{1.0, -0.5, 65504.0}));
}

TEST_F(NpyTest, FortranOrderIsRejected) {
  std::string p = fixture("numpy_f4_fortran_2x3.npy");
  expectError([&] { readNpy(p); }, {p, "Fortran"});
}

TEST_F(NpyTest, CorruptHeaderNamesTheFile) {
  std::string p = path("corrupt.npy");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, "
                       "3), }";
  // Break the shape tuple.
  std::string bad = header;
  bad.replace(bad.find("(2"), 2, "(x");
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(bad.size() + 1);
  bytes += '\0';
  bytes += bad + "\n" + std::string(24, '\0');
  writeBytes(p, bytes);
  expectError([&] { readNpy(p); }, {p, "shape"});

  writeBytes(p, "not a numpy file at all");
  expectError([&] { readNpy(p); }, {p, "magic"});

  // A valid header with too little data.
  std::string shortData = std::string("\x93NUMPY\x01\x00", 8);
  shortData += static_cast<char>(header.size() + 1);
  shortData += '\0';
  shortData += header + "\n" + std::string(8, '\0');
  writeBytes(p, shortData);
  expectError([&] { readNpy(p); }, {p, "shorter"});

  std::string badDescr = header;
  badDescr.replace(badDescr.find("<f4"), 3, "<c8");
  std::string complex = std::string("\x93NUMPY\x01\x00", 8);
  complex += static_cast<char>(badDescr.size() + 1);
  complex += '\0';
  complex += badDescr + "\n";
  writeBytes(p, complex);
  expectError([&] { readNpy(p); }, {p, "c8"});

  std::string missing = path("does_not_exist.npy");
  expectError([&] { readNpy(missing); }, {missing});
}

/// A version 1 .npy file with `dict` as its header and `data` after it.
static std::string npyBytes(const std::string &dict, const std::string &data) {
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>((dict.size() + 1) & 0xff);
  bytes += static_cast<char>((dict.size() + 1) >> 8);
  return bytes + dict + "\n" + data;
}

// A shape whose element count overflows int64 used to wrap around to a small
// allocation and a write past it (a segfault); a huge shape that does not
// overflow must not allocate before the file size is checked.
TEST_F(NpyTest, ShapeOverflowAndFileSizeAreChecked) {
  std::string p = path("overflow.npy");
  writeBytes(p, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(281474976710656, 281474976710656), }",
                         std::string(16, '\0')));
  expectError([&] { readNpy(p); }, {p, "64-bit"});

  // 2^28 * 2^28 elements (2^59 bytes) fit int64, but their bytes do not fit the
  // file.
  writeBytes(p, npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': "
                         "(268435456, 268435456), }",
                         std::string(16, '\0')));
  expectError([&] { readNpy(p); }, {p, "shorter", "the file holds 16"});

  // Wrapping to exactly zero elements (2^32 * 2^32) is caught too.
  writeBytes(p, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(4294967296, 4294967296), }",
                         ""));
  expectError([&] { readNpy(p); }, {p, "64-bit"});
}

// A full disk says why ("write failed" alone sent users hunting).
TEST_F(NpyTest, WriteErrorSaysWhy) {
  Tensor t = randomTensor({64}, DType::F32, 1);
  expectError([&] { writeNpy("/dev/full", t); },
              {"/dev/full", "No space left on device"});
}

TEST_F(NpyTest, NumpyReadsOurFiles) {
#ifdef RTXRT_TEST_PYTHON
  Tensor f =
      Tensor::fromVector(std::vector<float>{1.5f, -2, 3, 4, 5, 6}, {2, 3});
  Tensor b =
      Tensor::fromVector(std::vector<int32_t>{1, 0, 1}, {3}).to(DType::I1);
  Tensor h = f.to(DType::BF16);
  std::string pf = path("for_numpy_f.npy"), pb = path("for_numpy_b.npy"),
              ph = path("for_numpy_h.npy");
  writeNpy(pf, f);
  writeNpy(pb, b);
  writeNpy(ph, h);
  std::string script =
      "import numpy as np, sys; "
      "f = np.load('" +
      pf + "'); b = np.load('" + pb +
      "'); "
      "h = np.load('" +
      ph +
      "'); "
      "ok = f.dtype == np.float32 and f.shape == (2, 3) and "
      "f.tolist() == [[1.5, -2, 3], [4, 5, 6]] and b.dtype == np.bool_ and "
      "b.tolist() == [True, False, True] and h.tolist() == f.tolist(); "
      "sys.exit(0 if ok else 1)";
  std::string command =
      std::string(RTXRT_TEST_PYTHON) + " -c \"" + script + "\"";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
#else
  GTEST_SKIP() << "no python3 with numpy found at configure time";
#endif
}

} // namespace
