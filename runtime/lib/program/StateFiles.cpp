//===- StateFiles.cpp - results and state written at the end --------------===//

#include "StateFiles.h"

#include "rtxrt/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

using namespace rtxrt;
using namespace rtxrt::program;

int64_t rtxrt::program::readStepsDone(const std::string &stateDir) {
  int64_t steps = 0;
  std::ifstream done(stateDir + "/steps_done");
  if (!(done >> steps) || steps < 0)
    throw Error("--state " + stateDir +
                " lacks a valid steps_done (written by --save-state)");
  return steps;
}

/// Renames a file written aside into place: a run that dies while saving
/// leaves the previous file whole.
static void commit(const std::string &path) {
  if (std::rename((path + ".partial").c_str(), path.c_str()) != 0)
    throw Error("cannot write " + path + ": " + std::strerror(errno));
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
  if (writer)
    for (const std::string &dir : {outDir, stateDir})
      if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create " + dir + ": " + std::strerror(errno));
  for (size_t i = 0; i < results.size(); ++i) {
    const ResultSpec &result = spec.results[i];
    bool saveState = !stateDir.empty() && !result.state.empty();
    if (outDir.empty() && !saveState)
      continue;
    Tensor global = groups.gatherOnRankZero(results[i], result.shape,
                                            result.sharding,
                                            "writing the results");
    if (!writer)
      continue;
    if (!outDir.empty())
      writeNpy(outDir + "/result" + std::to_string(i) + ".npy", global);
    if (saveState) {
      std::string path = stateDir + "/" + result.state + ".npy";
      writeNpy(path + ".partial", global);
      commit(path);
    }
  }
  if (writer && !stateDir.empty()) {
    // Last, so that a directory with it holds a whole state.
    std::string path = stateDir + "/steps_done";
    {
      std::ofstream done(path + ".partial");
      done << stepsDone << "\n";
      if (!done.flush())
        throw Error("cannot write " + path);
    }
    commit(path);
  }
}
