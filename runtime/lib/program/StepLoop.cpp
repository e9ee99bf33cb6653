//===- StepLoop.cpp - the training loop -----------------------------------===//

#include "StepLoop.h"

#include <chrono>
#include <map>

using namespace rtxrt;
using namespace rtxrt::program;

std::vector<Tensor> StepLoop::run(std::vector<Tensor> &args,
                                  int64_t stepsBefore, int64_t steps) {
  // Which argument each piece of state returns to.
  std::map<std::string, size_t> argOfState;
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (std::string key = stateKeyOf(spec.args[i]); !key.empty())
      argOfState[key] = i;

  std::vector<Tensor> results;
  for (int64_t step = 1; step <= steps; ++step) {
    if (data)
      data->loadBatch(stepsBefore + step - 1, args, device);
    auto start = std::chrono::steady_clock::now();
    results = spec.step(context, args);
    context.finishStep();
    device.synchronize(); // the step's time includes its queued kernels
    StepRecord record;
    record.step = step;
    record.ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    record.collectiveMs = context.takeCollectiveSeconds() * 1000.0;
    if (spec.lossResult >= 0) {
      record.hasLoss = true;
      record.loss =
          groups.globalScalar(results[spec.lossResult],
                              spec.results[spec.lossResult].sharding,
                              "the loss of the step");
    }
    groups.markProgress(stepsBefore + step);
    progress.step(record);
    for (size_t i = 0; i < results.size(); ++i)
      if (auto it = argOfState.find(spec.results[i].state);
          !spec.results[i].state.empty() && it != argOfState.end())
        args[it->second] = results[i];
  }
  return results;
}
