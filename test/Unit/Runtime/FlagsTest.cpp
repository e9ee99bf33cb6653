//===- FlagsTest.cpp - an emitted program's flags, as one table -----------===//
//
// parseFlags over the table of program/Flags.cpp: values land in their
// fields, bounds and kinds are checked with messages that name the flag,
// flags that need another or exclude one are refused, and --help lists
// every flag the parser accepts.
//
//===----------------------------------------------------------------------===//

#include "Flags.h"
#include "rtxrt/core/Tensor.h"

#include <gtest/gtest.h>

#include <initializer_list>

using namespace rtxrt;
using namespace rtxrt::program;

namespace {

Flags parse(std::initializer_list<const char *> args) {
  std::vector<std::string> text = {"prog"};
  text.insert(text.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &arg : text)
    argv.push_back(arg.data());
  return parseFlags("prog", static_cast<int>(argv.size()), argv.data(),
                    LaunchHandoff());
}

/// The message parse throws for `args` ("" if none).
std::string refusal(std::initializer_list<const char *> args) {
  try {
    parse(args);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(FlagsTest, ValuesLandInTheirFields) {
  Flags flags =
      parse({"--steps", "3", "--seed=-7", "--timeout", "auto", "--checkpoint",
             "ck", "--keep-checkpoints=2", "--resume", "--preempt", "fail",
             "--metrics-port", "0", "--metrics-host", "0.0.0.0", "-h"});
  EXPECT_EQ(flags.steps, 3);
  EXPECT_EQ(flags.seed, -7);
  EXPECT_TRUE(flags.timeoutAuto);
  EXPECT_EQ(flags.checkpoint.dir, "ck");
  EXPECT_EQ(flags.checkpoint.keep, 2);
  EXPECT_TRUE(flags.checkpoint.resume);
  EXPECT_FALSE(flags.checkpoint.saveOnPreemption);
  EXPECT_EQ(flags.metricsPort, 0);
  EXPECT_EQ(flags.metricsHost, "0.0.0.0");
  EXPECT_TRUE(flags.help);
  // The GPU step runner's switches (StepRunner.h), off by default.
  EXPECT_FALSE(flags.noStepArena || flags.noCudaGraph);
  Flags device = parse({"--no-step-arena", "--no-cuda-graph"});
  EXPECT_TRUE(device.noStepArena);
  EXPECT_TRUE(device.noCudaGraph);
  EXPECT_EQ(refusal({"--no-cuda-graph=1"}).empty(), false);
  // A number after auto is a fixed timeout again.
  Flags fixed = parse({"--timeout", "auto", "--timeout", "5"});
  EXPECT_FALSE(fixed.timeoutAuto);
  EXPECT_EQ(fixed.timeout, 5);
}

TEST(FlagsTest, ValuesAreCheckedByKindAndBounds) {
  EXPECT_EQ(refusal({"--stepz", "3"}),
            "unknown flag '--stepz' (see prog --help)");
  EXPECT_EQ(refusal({"--steps"}), "--steps needs a value (see --help)");
  EXPECT_EQ(refusal({"--resume=yes"}), "--resume takes no value");
  EXPECT_EQ(refusal({"--data="}), "--data needs a path, got an empty one");
  EXPECT_EQ(refusal({"--timeout", "5s"}), "--timeout needs seconds, got '5s'");
  EXPECT_EQ(refusal({"--timeout", "nan"}),
            "--timeout needs a number of seconds in (0, 86400] or 'auto', "
            "got 'nan'");
  EXPECT_EQ(refusal({"--checkpoint", "ck", "--keep-checkpoints", "0"}),
            "--keep-checkpoints needs a whole number >= 1, got '0'");
  EXPECT_EQ(refusal({"--steps", "2.5"}),
            "--steps needs a whole number of steps >= 1, got '2.5'");
  EXPECT_EQ(refusal({"--metrics-port", "70000"}),
            "--metrics-port needs a port in [0, 65535], got '70000'");
  EXPECT_EQ(refusal({"--preempt", "maybe"}),
            "--preempt needs save or fail, got 'maybe'");
}

TEST(FlagsTest, CombinationsAreRefusedByName) {
  EXPECT_EQ(refusal({"--data", "t.bin", "--inputs", "in"}),
            "--data and --inputs both give the step's inputs; use one");
  EXPECT_EQ(refusal({"--params", "p", "--state", "s"}),
            "--params and --state both give the parameters; use one");
  EXPECT_EQ(refusal({"--resume"}), "--resume needs --checkpoint DIR");
  EXPECT_EQ(refusal({"--params-partial"}),
            "--params-partial needs --params PATH");
  EXPECT_EQ(refusal({"--trace-max-events", "10"}),
            "--trace-max-events needs --trace DIR (or RTX_TRACE)");
  EXPECT_EQ(refusal({"--metrics-linger", "5"}),
            "--metrics-linger keeps the /metrics endpoint up: it needs "
            "--metrics-port");
  EXPECT_EQ(refusal({"--rendezvous-timeout", "2"}),
            "--rendezvous-timeout 2 is shorter than --timeout 60, and the "
            "ranks meet under the longer of the two: pass --timeout too (or "
            "--timeout auto)");
}

TEST(FlagsTest, HeldOutEvaluationAndTokenInputs) {
  Flags flags =
      parse({"--data", "t.bin", "--eval-data", "h.bin", "--eval-every", "5",
             "--eval-batches=2", "--data-inputs", "idx,targets"});
  EXPECT_EQ(flags.eval.data, "h.bin");
  EXPECT_EQ(flags.eval.every, 5);
  EXPECT_EQ(flags.eval.batches, 2);
  EXPECT_EQ(flags.dataTokens, "idx");
  EXPECT_EQ(flags.dataLabels, "targets");
  // Without --eval-every: after the last step only, 4 batches.
  Flags defaults = parse({"--data", "t.bin", "--eval-data", "h.bin"});
  EXPECT_EQ(defaults.eval.every, 0);
  EXPECT_EQ(defaults.eval.batches, 4);
  EXPECT_EQ(refusal({"--data", "t.bin", "--eval-every", "2"}),
            "--eval-every needs --eval-data FILE.bin");
  EXPECT_EQ(refusal({"--data", "t.bin", "--eval-batches", "2"}),
            "--eval-batches needs --eval-data FILE.bin");
  EXPECT_EQ(refusal({"--eval-data", "h.bin"}),
            "--eval-data needs --data FILE.bin");
  EXPECT_EQ(refusal({"--data", "t.bin", "--eval-data", "h.bin",
                     "--eval-batches", "0"}),
            "--eval-batches needs a whole number of batches >= 1, got '0'");
  EXPECT_EQ(refusal({"--data-inputs", "idx,targets"}),
            "--data-inputs needs --data FILE.bin");
  EXPECT_EQ(refusal({"--data", "t.bin", "--data-inputs", "idx"}),
            "--data-inputs needs two input names, TOKENS,LABELS (the inputs "
            "that get the windows and the windows shifted by one), got "
            "'idx'");
  EXPECT_EQ(refusal({"--data", "t.bin", "--data-inputs", "a,b,c"}).empty(),
            false);
  EXPECT_EQ(refusal({"--data", "t.bin", "--data-inputs", "idx,idx"}),
            "--data-inputs names 'idx' twice: the tokens and the labels are "
            "two inputs");
}

TEST(FlagsTest, PeaksForTheRooflineNeedATrace) {
  Flags flags =
      parse({"--trace", "run", "--peak-tflops", "989.4", "--peak-gbps=4800"});
  EXPECT_EQ(flags.trace.peakTflops, 989.4);
  EXPECT_EQ(flags.trace.peakGbps, 4800);
  EXPECT_EQ(refusal({"--trace", "run", "--peak-tflops", "0"}),
            "--peak-tflops needs a number > 0, got '0'");
  EXPECT_EQ(refusal({"--peak-gbps", "10"}),
            "--peak-gbps needs --trace DIR (or RTX_TRACE)");
}

TEST(FlagsTest, HelpListsEveryFlag) {
  ProgramSpec spec;
  testing::internal::CaptureStdout();
  printHelp("prog", spec);
  std::string help = testing::internal::GetCapturedStdout();
  for (const char *flag : {"--steps N",
                           "--until-step N",
                           "--inputs DIR",
                           "--params-partial",
                           "--tf32",
                           "--portable-kernels",
                           "--data FILE.bin",
                           "--data-inputs TOKENS,LABELS",
                           "--eval-data FILE.bin",
                           "--eval-every N",
                           "--eval-batches K",
                           "--timeout S|auto",
                           "--rendezvous-timeout S",
                           "--trace-max-events N",
                           "--metrics-linger S",
                           "--checkpoint-every N",
                           "--wal-sync-every N",
                           "--preempt save|fail",
                           "--offload-dir DIR",
                           "--peak-tflops X",
                           "--peak-gbps Y",
                           "--no-step-arena",
                           "--no-cuda-graph",
                           "--help, -h"})
    EXPECT_NE(help.find(std::string("  ") + flag + " "), std::string::npos)
        << flag << " is not in --help:\n"
        << help;
}

} // namespace
