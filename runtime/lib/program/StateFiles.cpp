//===- StateFiles.cpp - results and state written at the end --------------===//

#include "StateFiles.h"

#include "rtxrt/FlatBuffer.h"

#include <tuple>

#include "StateDirectory.h"

#include "rtxrt/Arguments.h"
#include "rtxrt/Npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
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
  // A pipelined program writes the step's results: each from the ranks of
  // the first coordinate that returns it, the others passing a placeholder.
  bool pipelined = spec.stage >= 0;
  const std::vector<ResultSpec> &written =
      pipelined ? spec.stepResults : spec.results;
  for (size_t i = 0; i < written.size(); ++i) {
    const ResultSpec &result = written[i];
    bool saveState = !stateDir.empty() && !result.state.empty();
    if (outDir.empty() && !saveState)
      continue;
    Tensor local;
    int64_t owner = -1;
    if (pipelined) {
      owner = spec.ownerOf(i);
      const std::vector<int64_t> &mine = spec.stages[spec.stage].stepResult;
      auto it = std::find(mine.begin(), mine.end(), int64_t(i));
      local = it != mine.end() ? results[it - mine.begin()]
                               : Tensor(result.shape, result.dtype);
    } else {
      local = results[i];
    }
    // (index, state key, global value) of what this result writes: itself,
    // or a flat buffer's members.
    std::vector<std::tuple<int64_t, std::string, Tensor>> written;
    if (!result.flat.empty()) {
      std::vector<Tensor> shards =
          groups.exchangeToRankZero(local, "writing the results");
      if (writer)
        for (size_t m = 0; m < result.members.size(); ++m) {
          const ResultSpec &member = result.members[m];
          Tensor global(
              localBlock(member.sharding, member.shape, spec.mesh, 0)
                  .globalShape,
              member.dtype);
          for (int64_t r = 0; r < spec.mesh.numRanks(); ++r)
            if (isCanonicalReplica(member.sharding, spec.mesh, r))
              accumulateBlock(
                  global, unpackFlatMember(result.flat, shards, spec.mesh, r, m),
                  localBlock(member.sharding, member.shape, spec.mesh, r)
                      .offsets);
          written.emplace_back(member.index, member.state, global);
        }
    } else {
      Tensor global = groups.gatherOnRankZero(
          local, result.shape, result.sharding, "writing the results", owner);
      written.emplace_back(result.index >= 0 ? result.index : int64_t(i),
                           result.state, global);
    }
    if (!writer)
      continue;
    for (auto &entry : written) {
      int64_t index = std::get<0>(entry);
      const std::string &key = std::get<1>(entry);
      const Tensor &global = std::get<2>(entry);
      if (!outDir.empty())
        attempt([&] {
          writeNpy(outDir + "/result" + std::to_string(index) + ".npy",
                   global);
        });
      if (!stateDir.empty() && !key.empty())
        attempt([&] {
          std::string name = key + ".npy";
          state->write(name, encodeNpy(global, stateDir + "/" + name));
        });
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
