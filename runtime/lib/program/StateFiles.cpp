//===- StateFiles.cpp - results and state written at the end --------------===//

#include "StateFiles.h"

#include "StateDirectory.h"

#include "rtxrt/core/Npy.h"
#include "rtxrt/program/Arguments.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sys/stat.h>

using namespace rtxrt;
using namespace rtxrt::program;

int64_t rtxrt::program::readStepsDone(const std::string &stateDir) {
  int64_t steps = 0;
  std::ifstream done(committedStateDir(stateDir) + "/steps_done");
  if (!(done >> steps) || steps < 0)
    throw Error("--state " + stateDir +
                " lacks a valid steps_done (written by --save-state)");
  return steps;
}

namespace {

/// One writing of the final results and state. Every rank gathers; rank 0
/// writes, and after a failed write keeps gathering (the other ranks are in
/// those collectives) and reports the first error at the end.
class ResultWriter {
public:
  ResultWriter(const ProgramSpec &spec, ProcessGroups &groups,
               const std::string &outDir, const std::string &stateDir)
      : spec_(spec), groups_(groups), outDir_(outDir), stateDir_(stateDir),
        writer_(groups.rank() == 0) {}

  void open();
  /// A step without pipeline stages: each result from every rank.
  void writeWhole(const std::vector<Tensor> &results);
  /// A pipelined step: each result from the ranks of the first coordinate
  /// that returns it, the others passing a placeholder; then each
  /// coordinate's flat buffers.
  void writeStages(const std::vector<Tensor> &results);
  /// steps_done last, so that a directory with it holds a whole state;
  /// throws the first error.
  void finish(int64_t stepsDone);

private:
  template <typename Write> void attempt(Write &&write);
  /// Writes (index, state key, global value) on rank 0.
  void emit(int64_t index, const std::string &key, const Tensor &global);
  bool wanted(const ResultSpec &result) const {
    return !outDir_.empty() || (!stateDir_.empty() && !result.state.empty());
  }
  /// A flat buffer's members, each from the shards of the ranks of pipeline
  /// coordinate `owner` (-1: all ranks); a member an earlier coordinate
  /// wrote (a tied weight) is skipped.
  void writeFlat(const ResultSpec &result, const Tensor &local, int64_t owner);

  const ProgramSpec &spec_;
  ProcessGroups &groups_;
  const std::string &outDir_, &stateDir_;
  bool writer_;
  std::string error_;
  std::unique_ptr<StateDirectoryWriter> state_;
  std::set<int64_t> writtenMembers_;
};

template <typename Write> void ResultWriter::attempt(Write &&write) {
  if (!error_.empty())
    return;
  try {
    write();
  } catch (const std::exception &e) {
    error_ = e.what();
  }
}

void ResultWriter::open() {
  if (!writer_)
    return;
  if (!outDir_.empty() && mkdir(outDir_.c_str(), 0755) != 0 && errno != EEXIST)
    error_ = "cannot create " + outDir_ + ": " + std::strerror(errno);
  if (!stateDir_.empty())
    attempt(
        [&] { state_ = std::make_unique<StateDirectoryWriter>(stateDir_); });
}

void ResultWriter::emit(int64_t index, const std::string &key,
                        const Tensor &global) {
  if (!writer_)
    return;
  if (!outDir_.empty())
    attempt([&] {
      writeNpy(outDir_ + "/result" + std::to_string(index) + ".npy", global);
    });
  if (!stateDir_.empty() && !key.empty())
    attempt([&] {
      std::string name = key + ".npy";
      state_->write(name, encodeNpy(global, stateDir_ + "/" + name));
    });
}

void ResultWriter::writeFlat(const ResultSpec &result, const Tensor &local,
                             int64_t owner) {
  std::vector<Tensor> globals =
      groups_.gatherFlatOnRankZero(local, result, "writing the results", owner);
  for (size_t m = 0; m < globals.size(); ++m) {
    const ResultSpec &member = result.members[m];
    if (writtenMembers_.insert(member.index).second)
      emit(member.index, member.state, globals[m]);
  }
}

void ResultWriter::writeWhole(const std::vector<Tensor> &results) {
  for (size_t i = 0; i < spec_.results.size(); ++i) {
    const ResultSpec &result = spec_.results[i];
    if (!result.flat.empty()) {
      writeFlat(result, results[i], -1);
    } else if (wanted(result)) {
      Tensor global = groups_.gatherOnRankZero(
          results[i], result.shape, result.sharding, "writing the results", -1);
      emit(result.index >= 0 ? result.index : int64_t(i), result.state, global);
    }
  }
}

void ResultWriter::writeStages(const std::vector<Tensor> &results) {
  const std::vector<int64_t> &mine = spec_.stages[spec_.stage].stepResult;
  for (size_t i = 0; i < spec_.stepResults.size(); ++i) {
    const ResultSpec &result = spec_.stepResults[i];
    int64_t owner = spec_.ownerOf(i);
    if (owner < 0 || !wanted(result))
      continue; // a flat buffer's member: below
    auto it = std::find(mine.begin(), mine.end(), int64_t(i));
    Tensor local = it != mine.end() ? results[it - mine.begin()]
                                    : Tensor(result.shape, result.dtype);
    Tensor global = groups_.gatherOnRankZero(
        local, result.shape, result.sharding, "writing the results", owner);
    emit(int64_t(i), result.state, global);
  }
  for (size_t c = 0; c < spec_.stages.size(); ++c)
    for (size_t j = 0; j < spec_.stages[c].results.size(); ++j) {
      const ResultSpec &result = spec_.stages[c].results[j];
      if (result.flat.empty())
        continue;
      Tensor local = int64_t(c) == spec_.stage
                         ? results[j]
                         : Tensor(result.shape, result.dtype);
      writeFlat(result, local, int64_t(c));
    }
}

void ResultWriter::finish(int64_t stepsDone) {
  if (state_)
    attempt([&] {
      state_->write("steps_done", std::to_string(stepsDone) + "\n");
      state_->commit();
    });
  if (!error_.empty())
    throw Error(stateDir_.empty()
                    ? error_
                    : error_ + " (--save-state " + stateDir_ +
                          ": the previous state there, if any, is intact)");
}

} // namespace

void rtxrt::program::writeResults(const ProgramSpec &spec,
                                  ProcessGroups &groups,
                                  const std::vector<Tensor> &results,
                                  const std::string &outDir,
                                  const std::string &stateDir,
                                  int64_t stepsDone) {
  if (outDir.empty() && stateDir.empty())
    return;
  ResultWriter writer(spec, groups, outDir, stateDir);
  writer.open();
  if (spec.stage >= 0)
    writer.writeStages(results);
  else
    writer.writeWhole(results);
  writer.finish(stepsDone);
}
