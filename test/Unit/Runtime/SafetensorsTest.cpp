//===- SafetensorsTest.cpp - blocks of safetensors files ------------------===//
//
// rtxrt::SafetensorsFile reads a rank's block of a tensor and nothing else;
// a truncated file or a header out of bounds is an Error naming the file
// and the tensor, never a read past the end.

#include "rtxrt/core/Safetensors.h"
#include "rtxrt/core/Block.h"

#include "TestUtil.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

class SafetensorsTest : public ScratchDirTest {
protected:
  std::string write(const std::string &name, const std::string &bytes) {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  /// An 8-byte little-endian length, then `header`, then `data`.
  static std::string raw(const std::string &header, const std::string &data) {
    std::string bytes(8, '\0');
    for (int b = 0; b < 8; ++b)
      bytes[b] = static_cast<char>((header.size() >> (8 * b)) & 0xff);
    return bytes + header + data;
  }
};

TEST_F(SafetensorsTest, ReadsWhatItWritesInEveryDType) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16,
                      DType::I32, DType::I64, DType::I1})
    tensors.emplace_back(dtypeName(dtype), randomTensor({3, 5}, dtype, 7));
  std::string path = write("all.safetensors",
                           encodeSafetensors(tensors, {{"format", "pt"}}, ""));
  SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  for (const auto &[name, tensor] : tensors) {
    Tensor read = file.read(name);
    ASSERT_EQ(read.dtype(), tensor.dtype()) << name;
    EXPECT_EQ(toDoubles(read), toDoubles(tensor)) << name;
  }
}

// A [6, 4] tensor split over two ranks by rows and by columns: each block
// equals the slice of the whole, and reading it reads only its bytes.
TEST_F(SafetensorsTest, ABlockReadsOnlyItsBytes) {
  Tensor whole = randomTensor({6, 4}, DType::F32, 3);
  std::string path =
      write("w.safetensors", encodeSafetensors({{"w", whole}}, {}, ""));
  for (auto [offsets, shape] :
       std::vector<std::pair<std::vector<int64_t>, Shape>>{
           {{3, 0}, {3, 4}}, {{0, 2}, {6, 2}}, {{2, 1}, {1, 2}}}) {
    SafetensorsFile file(path);
    Tensor block = file.readBlock("w", offsets, shape);
    EXPECT_EQ(toDoubles(block), toDoubles(sliceBlock(whole, shape, offsets)));
    EXPECT_EQ(file.bytesRead(), numElements(shape) * 4);
  }
}

// The other rank's half holds NaN: this rank's half is read clean.
TEST_F(SafetensorsTest, OtherRanksGarbageIsNeverRead) {
  Tensor whole = randomTensor({4, 3}, DType::F32, 5);
  for (int64_t i = 6; i < 12; ++i)
    whole.setFromDouble(i, std::nan(""));
  SafetensorsFile file(
      write("half.safetensors", encodeSafetensors({{"w", whole}}, {}, "")));
  Tensor mine = file.readBlock("w", {0, 0}, {2, 3});
  for (double v : toDoubles(mine))
    EXPECT_FALSE(std::isnan(v));
}

TEST_F(SafetensorsTest, WidensSmallIntegers) {
  std::string path =
      write("ints.safetensors",
            raw(R"({"u":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                R"("i":{"dtype":"I16","shape":[1],"data_offsets":[2,4]}})",
                std::string("\xff\x01\xfe\xff", 4)));
  SafetensorsFile file(path);
  EXPECT_EQ(toDoubles(file.read("u")), (std::vector<double>{255, 1}));
  EXPECT_EQ(toDoubles(file.read("i")), (std::vector<double>{-2}));
}

TEST_F(SafetensorsTest, TruncatedFilesAndBadHeadersAreErrors) {
  std::string w =
      R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  std::string cut = write("cut.safetensors", raw(w, std::string(12, '\0')));
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(cut); }),
                       "cut.safetensors': tensor 'w' lies at bytes [0, 16) "
                       "of the data, which holds 12 bytes: the file is "
                       "truncated"));
  std::string past = write("past.safetensors", raw(w, "").substr(0, 20));
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(past); }),
                       "runs past the end of the file (20 bytes)"));
  std::string tiny = write("tiny.safetensors", "abc");
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(tiny); }),
                       "has 3 bytes, fewer than the 8"));
  std::string json = write("json.safetensors", raw("{\"w\": [", ""));
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(json); }),
                       "its header is not valid JSON"));
  std::string size =
      write("size.safetensors",
            raw(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                std::string(8, '\0')));
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(size); }),
                       "tensor 'w' of shape [3] F32 needs 12 bytes, its "
                       "data_offsets give 8"));
  std::string huge =
      write("huge.safetensors",
            raw(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],)"
                R"("data_offsets":[0,0]}})",
                ""));
  EXPECT_TRUE(contains(errorOf([&] { SafetensorsFile f(huge); }),
                       "more elements than a 64-bit count holds"));
}

TEST_F(SafetensorsTest, BlocksOutsideTheTensorAndUnknownNamesAreErrors) {
  std::string path =
      write("w.safetensors",
            encodeSafetensors({{"w", Tensor({2, 2}, DType::F32)}}, {}, ""));
  SafetensorsFile file(path);
  EXPECT_TRUE(contains(errorOf([&] {
                         file.readBlock("w", {1, 0}, {2, 2});
                       }),
                       "a block [2, 2] at [1, 0] does not fit in tensor 'w' "
                       "of shape [2, 2]"));
  EXPECT_TRUE(contains(errorOf([&] { file.read("v"); }),
                       "w.safetensors': holds no tensor 'v'"));
}

// Hugging Face's shards: the index names the file of each tensor.
TEST_F(SafetensorsTest, ShardsFollowTheIndex) {
  std::string shards = dir + "/shards";
  mkdir(shards.c_str(), 0755);
  Tensor a = randomTensor({2}, DType::F32, 1),
         b = randomTensor({3}, DType::F32, 2);
  created.insert(created.begin(), shards);
  std::string one = "model-00001-of-00002.safetensors";
  std::string two = "model-00002-of-00002.safetensors";
  std::ofstream(shards + "/" + one) << encodeSafetensors({{"a", a}}, {}, "");
  std::ofstream(shards + "/" + two) << encodeSafetensors({{"b", b}}, {}, "");
  std::ofstream(shards + "/model.safetensors.index.json")
      << R"({"metadata": {}, "weight_map": {"a": ")" << one << R"(", "b": ")"
      << two << R"("}})";
  for (const char *f :
       {"model.safetensors.index.json", one.c_str(), two.c_str()})
    created.insert(created.begin(), shards + "/" + f);
  ASSERT_TRUE(SafetensorsSet::holdsSafetensors(shards));
  SafetensorsSet set(shards);
  EXPECT_EQ(toDoubles(set.fileOf("b")->read("b")), toDoubles(b));
  EXPECT_EQ(set.fileOf("c"), nullptr);
}

} // namespace
