//===- ArgumentsTest.cpp - where a step's arguments come from -------------===//
//
// rtxrt::ArgumentLoader gives emitted programs and rtx-run the same values:
// these tests pin its order of sources (given, file, initializer or draw)
// and its checks on a mesh of two ranks.

#include "rtxrt/program/Arguments.h"
#include "rtxrt/core/Npy.h"
#include "rtxrt/core/Safetensors.h"

#include "TestUtil.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using namespace rtxrt::test;

namespace {

class ArgumentsTest : public ScratchDirTest {
protected:
  std::string file(const std::string &name, const Tensor &t) {
    std::string p = path(name);
    writeNpy(p, t);
    return p;
  }
  /// A [4, 3] f32 argument split over "dp" (2 ranks): local [2, 3].
  static ArgSpec split(ArgSpec::Kind kind, const std::string &name) {
    ArgSpec arg;
    arg.kind = kind;
    arg.name = name;
    arg.shape = {2, 3};
    arg.sharding.dims = {{"dp"}, {}};
    return arg;
  }
  std::string safetensors(const std::string &name,
                          std::vector<std::pair<std::string, Tensor>> tensors) {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary) << encodeSafetensors(tensors, {}, p);
    return p;
  }
  /// Part `k` of a user's tensor `user` [4, 6]: its columns [3k, 3k + 3),
  /// split over "dp" by rows (local [2, 3]).
  static ArgSpec part(const std::string &user, int64_t k) {
    ArgSpec arg = split(ArgSpec::Param, user + "@" + std::to_string(k));
    arg.partOf = {user, 1, 3 * k};
    return arg;
  }
  MeshLayout mesh{{"dp"}, {2}};
};

TEST_F(ArgumentsTest, ParamFromFileIsSlicedPerRank) {
  Tensor global = randomTensor({4, 3}, DType::F32, 1);
  file("w.npy", global);
  ArgumentSources sources;
  sources.params = dir;
  ArgumentLoader loader(mesh, sources);
  ArgSpec w = split(ArgSpec::Param, "w");
  Tensor rank1 = loader.block(w, 1);
  ASSERT_EQ(rank1.shape(), (Shape{2, 3}));
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(rank1.getAsDouble(i), global.getAsDouble(6 + i));
}

// A --params directory without the parameter is an error naming it; with
// paramsPartial (--params-partial) the parameter uses its initializer.
TEST_F(ArgumentsTest, ParamWithoutFileIsAnErrorUnlessPartial) {
  ArgumentSources sources;
  sources.params = dir; // no w.npy there
  ArgSpec w = split(ArgSpec::Param, "w");
  w.init = InitKind::Constant;
  w.a = 0.5;
  {
    ArgumentLoader loader(mesh, sources);
    EXPECT_EQ(errorOf([&] { loader.block(w, 0); }),
              "--params " + dir + " lacks parameter 'w' (expected " + dir +
                  "/w.npy of shape [4, 3]); pass --params-partial to draw "
                  "the missing ones from their initializers");
  }
  sources.paramsPartial = true;
  ArgumentLoader loader(mesh, sources);
  Tensor t = loader.block(w, 0);
  for (int64_t i = 0; i < t.numel(); ++i)
    EXPECT_EQ(t.getAsDouble(i), 0.5);
}

TEST_F(ArgumentsTest, ParamsDirectoryMustExist) {
  ArgumentSources sources;
  sources.params = dir + "/nowhere";
  EXPECT_EQ(errorOf([&] { ArgumentLoader(mesh, sources); }),
            "--params " + dir + "/nowhere: No such file or directory");
}

TEST_F(ArgumentsTest, GivenParamComesFirstAndIsChecked) {
  file("w.npy", Tensor({4, 3}, DType::F32));
  ArgumentSources sources;
  sources.params = dir;
  ArgumentLoader loader(mesh, sources);
  Tensor given = randomTensor({4, 3}, DType::F32, 2);
  loader.giveParam("w", given);
  EXPECT_EQ(loader.block(split(ArgSpec::Param, "w"), 0).getAsDouble(1),
            given.getAsDouble(1));
  loader.giveParam("w", Tensor({3, 4}, DType::F32));
  EXPECT_EQ(errorOf([&] { loader.block(split(ArgSpec::Param, "w"), 0); }),
            "parameter 'w' was given with shape [3, 4], the program expects "
            "[4, 3]");
}

TEST_F(ArgumentsTest, StateIsZeroOrReadByItsKey) {
  ArgSpec m = split(ArgSpec::State, "exp_avg:w");
  {
    ArgumentLoader loader(mesh, ArgumentSources());
    Tensor t = loader.block(m, 1);
    for (int64_t i = 0; i < t.numel(); ++i)
      EXPECT_EQ(t.getAsDouble(i), 0.0);
  }
  Tensor global = randomTensor({4, 3}, DType::F32, 3);
  file("exp_avg:w.npy", global);
  file("param:w.npy", global);
  ArgumentSources sources;
  sources.stateDir = dir;
  // Without steps_done (--save-state writes it last) the files are no
  // saved state.
  EXPECT_NE(errorOf([&] {
              ArgumentLoader loader(mesh, sources);
            }).find("lacks a valid steps_done"),
            std::string::npos);
  std::ofstream(path("steps_done")) << "2\n";
  ArgumentLoader loader(mesh, sources);
  EXPECT_EQ(loader.block(m, 1).getAsDouble(0), global.getAsDouble(6));
  // A parameter comes from param:NAME unless its state key says otherwise.
  EXPECT_EQ(loader.block(split(ArgSpec::Param, "w"), 0).getAsDouble(2),
            global.getAsDouble(2));
}

TEST_F(ArgumentsTest, ParamsAndStateExcludeEachOther) {
  ArgumentSources sources;
  sources.params = sources.stateDir = dir;
  EXPECT_EQ(errorOf([&] { ArgumentLoader loader(mesh, sources); }),
            "--params and --state both give the parameters; use one");
}

TEST_F(ArgumentsTest, DrawnInputsDoNotDependOnTheRanks) {
  ArgSpec x = split(ArgSpec::Input, "x");
  ArgumentSources sources;
  sources.seed = 7;
  ArgumentLoader loader(mesh, sources);
  Tensor whole = randomInput("x", 7, {4, 3}, DType::F32, 2);
  EXPECT_EQ(loader.block(x, 1).getAsDouble(0), whole.getAsDouble(6));
}

TEST_F(ArgumentsTest, MissingInputNamesFileShapeAndHint) {
  ArgSpec x = split(ArgSpec::Input, "x");
  x.dtype = DType::I32;
  ArgumentSources sources;
  sources.inputsDir = dir;
  sources.drawInputs = false;
  sources.drawHint = " (or pass --random)";
  ArgumentLoader loader(mesh, sources);
  EXPECT_EQ(errorOf([&] { loader.block(x, 0); }),
            "missing input 'x': expected " + dir +
                "/x.npy of shape [4, 3] i32 (or pass --random)");
}

TEST_F(ArgumentsTest, InputDTypeMustMatchExceptF32For16BitFloats) {
  file("x.npy", Tensor({4, 3}, DType::F32));
  ArgumentSources sources;
  sources.inputsDir = dir;
  sources.drawInputs = false;
  ArgumentLoader loader(mesh, sources);
  ArgSpec x = split(ArgSpec::Input, "x");
  x.dtype = DType::BF16;
  EXPECT_EQ(loader.globalInput(x).dtype(), DType::BF16);
  x.dtype = DType::I32;
  EXPECT_EQ(errorOf([&] { loader.globalInput(x); }),
            "input 'x' from " + dir +
                "/x.npy has dtype f32, the program expects i32");
}

// A safetensors file: each rank reads its block, and only that block: the
// other rank's rows hold NaN, which this rank never sees.
TEST_F(ArgumentsTest, ParamFromSafetensorsReadsOnlyTheRanksBlock) {
  Tensor global = randomTensor({4, 3}, DType::F32, 1);
  for (int64_t i = 6; i < 12; ++i)
    global.setFromDouble(i, std::nan(""));
  ArgumentSources sources;
  sources.params = safetensors("w.safetensors", {{"w", global}});
  ArgumentLoader loader(mesh, sources);
  ArgSpec w = split(ArgSpec::Param, "w");
  Tensor rank0 = loader.block(w, 0);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(rank0.getAsDouble(i), global.getAsDouble(i));
  EXPECT_EQ(errorOf([&] { loader.block(w, 1); }),
            "parameter 'w' in " + sources.params +
                " holds NaN (element 6): training from it gives loss=nan");
}

// rtx.part_of: a part reads its block of the user's tensor, from .npy and
// safetensors alike; a file in the part's own name comes first.
TEST_F(ArgumentsTest, PartOfReadsItsBlockOfTheUsersTensor) {
  Tensor user = randomTensor({4, 6}, DType::F32, 4);
  Shape local{2, 3};
  Tensor expected = sliceBlock(user, local, {2, 3}); // rank 1 of part 1
  file("u.npy", user);
  ArgumentSources npy;
  npy.params = dir;
  ArgumentSources st;
  st.params = safetensors("u.safetensors", {{"u", user.to(DType::BF16)}});
  for (const ArgumentSources &sources : {npy, st}) {
    ArgumentLoader loader(mesh, sources);
    Tensor block = loader.block(part("u", 1), 1);
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_NEAR(block.getAsDouble(i), expected.getAsDouble(i),
                  sources.params == dir
                      ? 0.0
                      : 1e-2 * std::abs(expected.getAsDouble(i))); // bf16
  }
  Tensor own = randomTensor({4, 3}, DType::F32, 5);
  file("u@1.npy", own);
  ArgumentLoader loader(mesh, npy);
  EXPECT_EQ(loader.block(part("u", 1), 0).getAsDouble(4), own.getAsDouble(4));
}

TEST_F(ArgumentsTest, PartsThatTheFilesDoNotHoldAreErrors) {
  ArgumentSources sources;
  sources.params =
      safetensors("u.safetensors", {{"u", Tensor({4, 5}, DType::F32)}});
  ArgumentLoader loader(mesh, sources);
  EXPECT_EQ(errorOf([&] { loader.block(part("u", 1), 0); }),
            "parameter 'u@1' [4, 3] is the block [3, 6) of dimension 1 of "
            "'u' (rtx.part_of); tensor 'u' in " +
                sources.params + " has shape [4, 5], which does not hold it");
  EXPECT_EQ(errorOf([&] { loader.block(part("v", 0), 0); }),
            "--params " + sources.params +
                " lacks parameter 'v@0' (expected tensor 'v@0' in " +
                sources.params + " of shape [4, 3], or tensor 'v' in " +
                sources.params +
                " that holds it as the block [0, 3) of dimension 1 of 'v'); "
                "pass --params-partial to draw the missing ones from their "
                "initializers");
  ArgSpec w = split(ArgSpec::Param, "u");
  EXPECT_EQ(errorOf([&] { loader.block(w, 0); }),
            "parameter 'u' in " + sources.params +
                " has shape [4, 5], the program expects [4, 3]");
}

TEST_F(ArgumentsTest, ParamsPathMustBeSafetensorsOrADirectory) {
  ArgumentSources sources;
  sources.params = dir + "/cut.safetensors";
  std::ofstream(sources.params) << "abc";
  created.push_back(sources.params);
  EXPECT_EQ(errorOf([&] { ArgumentLoader(mesh, sources); }),
            "--params: safetensors file '" + sources.params +
                "': has 3 bytes, fewer than the 8 of a safetensors header's "
                "length");
}

TEST(StateKeyTest, ParamsDefaultToParamColonName) {
  ArgSpec arg;
  arg.kind = ArgSpec::Param;
  arg.name = "w";
  EXPECT_EQ(stateKeyOf(arg), "param:w");
  arg.state = "other";
  EXPECT_EQ(stateKeyOf(arg), "other");
  arg = ArgSpec();
  EXPECT_EQ(stateKeyOf(arg), "");
}

} // namespace
