//===- rtx-schedule.cpp - write, check and simulate pipeline schedules ----===//
//
//   rtx-schedule --schedule 1f1b --ranks 4 --micro-batches 8
//   rtx-schedule --check my-schedule.txt [--virtual 2]
//
// Prints a generated schedule (rtx/Analysis/PipelineSchedule.h: one line
// per rank, actions like 2F0, 1B3, 0W1, 0SEND_F0), or reads one that a
// person wrote, and simulates it under per-action costs:
// - a sound schedule prints its step time, bubble fraction (next to the
//   formula for GPipe, 1F1B and interleaved) and peak live activations per
//   stage;
// - an unsound one (a missing send, a backward before its forward, a cycle
//   between ranks, counts that do not balance) prints a diagnostic per
//   problem, naming the rank, the action and why, and exits with 1.
// --timeline FILE writes when each action ran, as JSON (pictures).
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/PipelineSchedule.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir::rtx::pipeline;

// Only these options in --help, not LLVM's own.
static cl::OptionCategory category("rtx-schedule options");

static cl::opt<std::string>
    scheduleName("schedule",
                 cl::desc("gpipe, 1f1b, interleaved or zb-h1 (generate one)"),
                 cl::value_desc("kind"), cl::cat(category));
static cl::opt<std::string>
    checkFile("check", cl::desc("read a schedule from this file instead"),
              cl::value_desc("file"), cl::cat(category));
static cl::opt<int64_t> ranks("ranks", cl::desc("pipeline ranks"), cl::init(0),
                              cl::cat(category));
static cl::opt<int64_t> microBatches("micro-batches",
                                     cl::desc("micro-batches per step"),
                                     cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    virtualStages("virtual", cl::desc("virtual stages per rank (interleaved)"),
                  cl::init(1), cl::cat(category));
static cl::opt<std::string>
    costText("costs",
             cl::desc("time of F,B,W per stage (default 1,2,1: a B without "
                      "W takes B, a split one B - W and W)"),
             cl::init("1,2,1"), cl::value_desc("F,B,W"), cl::cat(category));
static cl::opt<double> latency("latency",
                               cl::desc("time a message takes (default 0)"),
                               cl::init(0), cl::cat(category));
static cl::opt<bool> quiet("quiet",
                           cl::desc("do not print the schedule itself"),
                           cl::cat(category));
static cl::opt<std::string>
    timelineFile("timeline", cl::desc("write the simulated timeline as JSON"),
                 cl::value_desc("file"), cl::cat(category));

static int fail(const Twine &message) {
  errs() << "rtx-schedule: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "rtx-schedule: write, check and simulate pipeline schedules\n");
  if (scheduleName.empty() == checkFile.empty())
    return fail("give --schedule KIND (generate) or --check FILE (read)");

  Schedule schedule;
  std::string kindName = "the schedule";
  if (!checkFile.empty()) {
    auto buffer = MemoryBuffer::getFile(checkFile);
    if (!buffer)
      return fail("cannot read " + checkFile + ": " +
                  buffer.getError().message());
    ParseResult parsed =
        parseSchedule((*buffer)->getBuffer().str(), virtualStages);
    for (const Diagnostic &d : parsed.errors)
      errs() << checkFile << ": error: " << d.str() << "\n";
    if (!parsed.schedule)
      return 1;
    schedule = *parsed.schedule;
    if (ranks > 0 && schedule.ranks != ranks)
      return fail(checkFile + " lists " + Twine(schedule.ranks) +
                  " ranks, not --ranks " + Twine(ranks));
    if (microBatches > 0)
      schedule.microBatches = microBatches;
  } else {
    std::optional<ScheduleKind> kind = parseScheduleKind(scheduleName);
    if (!kind)
      return fail("unknown --schedule '" + scheduleName +
                  "' (gpipe, 1f1b, interleaved, zb-h1)");
    if (ranks < 1 || microBatches < 1)
      return fail("--schedule needs --ranks N and --micro-batches M");
    GenerateResult generated =
        generateSchedule(*kind, ranks, microBatches, virtualStages);
    if (!generated.schedule)
      return fail(generated.error);
    schedule = *generated.schedule;
    kindName = scheduleKindName(*kind);
  }

  ActionCosts costs;
  {
    SmallVector<StringRef, 3> parts;
    StringRef(costText).split(parts, ',');
    double values[3];
    if (parts.size() != 3)
      return fail("--costs needs F,B,W, got '" + costText + "'");
    for (int i = 0; i < 3; ++i)
      if (parts[i].trim().getAsDouble(values[i]) || !(values[i] >= 0))
        return fail("--costs needs three non-negative times, got '" + costText +
                    "'");
    if (values[2] > values[1])
      return fail("--costs: W (" + parts[2] + ") is part of B (" + parts[1] +
                  ") and cannot exceed it");
    costs.forward = values[0];
    costs.backward = values[1];
    costs.weightGrad = values[2];
    costs.inputGrad = values[1] - values[2];
    costs.latency = latency;
  }

  if (!quiet)
    outs() << schedule.str();
  SimulationResult result = simulate(schedule, costs);
  if (!result.errors.empty()) {
    for (const Diagnostic &d : result.errors)
      errs() << (checkFile.empty() ? std::string("rtx-schedule")
                                   : std::string(checkFile))
             << ": error: " << d.str() << "\n";
    return 1;
  }
  outs() << kindName << ": " << schedule.ranks << " ranks, "
         << schedule.stages() << " stages, " << schedule.microBatches
         << " micro-batches: step time " << format("%g", result.makespan)
         << ", bubble fraction " << format("%.4f", result.bubbleFraction());
  if (scheduleName == "gpipe" || scheduleName == "1f1b" ||
      scheduleName == "interleaved")
    outs() << " (formula (p-1)/(v m+p-1): "
           << format("%.4f", formulaBubbleFraction(schedule.ranks,
                                                   schedule.microBatches,
                                                   schedule.stagesPerRank))
           << ")";
  outs() << "\npeak live activations per stage:";
  for (int64_t peak : result.peakActivations)
    outs() << " " << peak;
  outs() << "\n";

  if (!timelineFile.empty()) {
    std::error_code error;
    raw_fd_ostream os(timelineFile, error, sys::fs::OF_Text);
    if (error)
      return fail("cannot write " + timelineFile + ": " + error.message());
    // {"ranks": R, "actions": [[rank, "2F0", start, end], ...]}
    os << "{\"ranks\": " << schedule.ranks
       << ", \"makespan\": " << format("%.17g", result.makespan)
       << ", \"actions\": [";
    bool first = true;
    for (int64_t r = 0; r < schedule.ranks; ++r)
      for (size_t i = 0; i < schedule.actions[r].size(); ++i) {
        os << (first ? "" : ", ") << "[" << r << ", \""
           << schedule.actions[r][i].str() << "\", "
           << format("%.17g", result.timeline[r][i].first) << ", "
           << format("%.17g", result.timeline[r][i].second) << "]";
        first = false;
      }
    os << "]}\n";
  }
  return 0;
}
