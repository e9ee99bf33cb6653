//===- StepLog.cpp - a program's write-ahead log between checkpoints ------===//

#include "StepLog.h"

#include "rtxrt/core/Tensor.h"

#include <cinttypes>
#include <cstdio>

using namespace rtxrt;
using namespace rtxrt::program;

std::string rtxrt::program::hexHash(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, value);
  return text;
}

namespace {
std::string range(int64_t first, int64_t last) {
  return first == last ? std::to_string(first)
                       : std::to_string(first) + "-" + std::to_string(last);
}
} // namespace

std::string StepLog::pathIn(const std::string &checkpointDir) {
  return checkpointDir + "/wal.log";
}

std::string rtxrt::program::planDifference(
    const std::map<std::string, std::string> &metadata, const std::string &mesh,
    const std::string &layout) {
  auto field = [&](const char *key) {
    auto it = metadata.find(key);
    return it == metadata.end() ? std::string("?") : it->second;
  };
  if (field("mesh") != mesh)
    return "the checkpoint was written on mesh " + field("mesh") +
           ", this run is on " + mesh + ": its sums run in another order";
  if (field("state_layout") != layout)
    return "the checkpoint was written under a plan that cuts the state "
           "into other blocks";
  return "";
}

StepLog::StepLog(const CheckpointFlags &flags, int64_t rank,
                 int64_t resumedStep, const std::string &otherPlan)
    : rank_(rank), deterministic_(flags.deterministic),
      path_(pathIn(flags.dir)) {
  // Without --deterministic only rank 0 needs the log (it writes it).
  // With it every rank reads the log to compare (rank 0 may be cutting a
  // torn tail meanwhile: a reader sees it or not, and skips it either way).
  if (rank != 0 && !deterministic_)
    return;
  wal::Contents contents;
  if (rank == 0) {
    writer_ = std::make_unique<wal::Writer>(path_, flags.walSyncEvery);
    contents = writer_->contents();
    if (contents.tornBytes > 0)
      std::printf("wal: cut a torn tail of %lld bytes from %s (a record the "
                  "last run did not finish)\n",
                  static_cast<long long>(contents.tornBytes), path_.c_str());
  } else {
    contents = wal::read(path_);
  }
  int64_t first = -1, last = -1;
  for (const wal::Record &r : contents.records)
    if (r.step > resumedStep) {
      replay_[r.step] = r;
      first = first < 0 ? r.step : first;
      last = r.step;
    }
  if (replay_.empty())
    return;
  std::string why;
  if (!deterministic_)
    why = "not compared: no --deterministic";
  else if (!otherPlan.empty())
    why = "not compared: " + otherPlan;
  else if (replay_.begin()->second.parameterHash == 0)
    why = "not compared: the run that wrote them had no --deterministic";
  if (why.empty()) {
    if (rank == 0)
      std::printf("wal: replaying steps %s after the checkpoint of step "
                  "%lld: each step's state hash must match the log\n",
                  range(first, last).c_str(),
                  static_cast<long long>(resumedStep));
    return;
  }
  if (rank == 0) {
    std::printf("wal: steps %s of the log are redone (%s)\n",
                range(first, last).c_str(), why.c_str());
    writer_->truncateAfter(resumedStep);
  }
  replay_.clear();
}

StepLog::~StepLog() = default;

void StepLog::afterStep(int64_t stepsDone, uint64_t stateHash) {
  wal::Record record;
  record.step = stepsDone;
  // Each step reads the next --data batch; without --data the inputs are
  // the same every step. No step draws random numbers (dropout's mask is a
  // pure function of the seed and the element) and there is no dynamic
  // loss scaling: the counter stays 0 and the scale 1.
  record.dataPosition = stepsDone;
  record.rngCounter = 0;
  record.lossScale = 1.0f;
  record.parameterHash = stateHash;
  if (auto it = replay_.find(stepsDone); it != replay_.end()) {
    const wal::Record &logged = it->second;
    if (logged.parameterHash != stateHash ||
        logged.dataPosition != record.dataPosition)
      throw Error("deterministic replay: step " + std::to_string(stepsDone) +
                  " does not match " + path_ + ": state hash " +
                  hexHash(stateHash) + " (logged " +
                  hexHash(logged.parameterHash) + "), data position " +
                  std::to_string(record.dataPosition) + " (logged " +
                  std::to_string(logged.dataPosition) +
                  "); the run is not deterministic (other data, another "
                  "program, or another machine's kernels?)");
    replayedFirst_ = replayedFirst_ < 0 ? stepsDone : replayedFirst_;
    replayedLast_ = stepsDone;
    replay_.erase(it);
    if (replay_.empty() && rank_ == 0)
      std::printf("wal: replayed steps %s: every state hash matches the log\n",
                  range(replayedFirst_, replayedLast_).c_str());
    return;
  }
  if (writer_)
    writer_->append(record);
}

void StepLog::covered(int64_t oldestKept) {
  if (writer_)
    writer_->truncateThrough(oldestKept);
}

void StepLog::sync() {
  if (writer_)
    writer_->sync();
}
