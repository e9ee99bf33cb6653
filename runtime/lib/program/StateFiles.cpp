//===- StateFiles.cpp - results and state written at the end --------------===//

#include "StateFiles.h"

#include "StateDirectory.h"

#include "rtxrt/program/Arguments.h"
#include "rtxrt/core/Npy.h"

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

void rtxrt::program::writeResults(const ProgramSpec &spec,
                                  ProcessGroups &groups,
                                  const std::vector<Tensor> &results,
                                  const std::string &outDir,
                                  const std::string &stateDir,
                                  int64_t stepsDone) {
  if (outDir.empty() && stateDir.empty())
    return;
  bool writer = groups.rank() == 0;
  // Rank 0 keeps gathering after a failed write (the other ranks are in
  // those collectives) and reports the first error at the end.
  std::string error;
  auto attempt = [&](auto &&write) {
    if (!error.empty())
      return;
    try {
      write();
    } catch (const std::exception &e) {
      error = e.what();
    }
  };
  std::unique_ptr<StateDirectoryWriter> state;
  if (writer) {
    if (!outDir.empty() && mkdir(outDir.c_str(), 0755) != 0 && errno != EEXIST)
      error = "cannot create " + outDir + ": " + std::strerror(errno);
    if (!stateDir.empty())
      attempt(
          [&] { state = std::make_unique<StateDirectoryWriter>(stateDir); });
  }
  // Writes (index, state key, global value) on rank 0.
  auto emit = [&](int64_t index, const std::string &key, const Tensor &global) {
    if (!writer)
      return;
    if (!outDir.empty())
      attempt([&] {
        writeNpy(outDir + "/result" + std::to_string(index) + ".npy", global);
      });
    if (!stateDir.empty() && !key.empty())
      attempt([&] {
        std::string name = key + ".npy";
        state->write(name, encodeNpy(global, stateDir + "/" + name));
      });
  };
  auto wanted = [&](const ResultSpec &result) {
    return !outDir.empty() || (!stateDir.empty() && !result.state.empty());
  };
  // A flat buffer's members, each from the shards of the ranks of pipeline
  // coordinate `owner` (-1: all ranks); a member an earlier coordinate wrote
  // (a tied weight) is skipped.
  std::set<int64_t> writtenMembers;
  auto writeFlat = [&](const ResultSpec &result, const Tensor &local,
                       int64_t owner) {
    std::vector<Tensor> globals = groups.gatherFlatOnRankZero(
        local, result, "writing the results", owner);
    for (size_t m = 0; m < globals.size(); ++m) {
      const ResultSpec &member = result.members[m];
      if (writtenMembers.insert(member.index).second)
        emit(member.index, member.state, globals[m]);
    }
  };

  bool pipelined = spec.stage >= 0;
  if (!pipelined) {
    for (size_t i = 0; i < spec.results.size(); ++i) {
      const ResultSpec &result = spec.results[i];
      if (!result.flat.empty()) {
        writeFlat(result, results[i], -1);
      } else if (wanted(result)) {
        Tensor global =
            groups.gatherOnRankZero(results[i], result.shape, result.sharding,
                                    "writing the results", -1);
        emit(result.index >= 0 ? result.index : int64_t(i), result.state,
             global);
      }
    }
  } else {
    // The step's results: each from the ranks of the first coordinate that
    // returns it, the others passing a placeholder; then each coordinate's
    // flat buffers.
    const std::vector<int64_t> &mine = spec.stages[spec.stage].stepResult;
    for (size_t i = 0; i < spec.stepResults.size(); ++i) {
      const ResultSpec &result = spec.stepResults[i];
      int64_t owner = spec.ownerOf(i);
      if (owner < 0 || !wanted(result))
        continue; // a flat buffer's member: below
      auto it = std::find(mine.begin(), mine.end(), int64_t(i));
      Tensor local = it != mine.end() ? results[it - mine.begin()]
                                      : Tensor(result.shape, result.dtype);
      Tensor global = groups.gatherOnRankZero(
          local, result.shape, result.sharding, "writing the results", owner);
      emit(int64_t(i), result.state, global);
    }
    for (size_t c = 0; c < spec.stages.size(); ++c)
      for (size_t j = 0; j < spec.stages[c].results.size(); ++j) {
        const ResultSpec &result = spec.stages[c].results[j];
        if (result.flat.empty())
          continue;
        Tensor local = int64_t(c) == spec.stage
                           ? results[j]
                           : Tensor(result.shape, result.dtype);
        writeFlat(result, local, int64_t(c));
      }
  }
  if (state)
    attempt([&] {
      // Last, so that a directory with it holds a whole state.
      state->write("steps_done", std::to_string(stepsDone) + "\n");
      state->commit();
    });
  if (!error.empty())
    throw Error(stateDir.empty()
                    ? error
                    : error + " (--save-state " + stateDir +
                          ": the previous state there, if any, is intact)");
}
