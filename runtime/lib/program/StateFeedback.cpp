//===- StateFeedback.cpp - a step's state into the next step --------------===//

#include "rtxrt/program/StateFeedback.h"

#include <map>

using namespace rtxrt;

StateFeedback::StateFeedback(const std::vector<ArgSpec> &args,
                             const std::vector<std::string> &resultStates) {
  // Which argument each piece of state returns to (the last one with the
  // key, as the compiler's description takes it).
  std::map<std::string, int64_t> argOfState;
  for (size_t i = 0; i < args.size(); ++i)
    if (std::string key = stateKeyOf(args[i]); !key.empty())
      argOfState[key] = static_cast<int64_t>(i);
  for (const std::string &state : resultStates) {
    auto it = argOfState.find(state);
    argumentOf_.push_back(!state.empty() && it != argOfState.end() ? it->second
                                                                   : -1);
  }
}

void StateFeedback::apply(std::vector<Tensor> &args,
                          const std::vector<Tensor> &results) const {
  for (size_t i = 0; i < results.size(); ++i)
    if (int64_t arg = argumentOf(i); arg >= 0)
      args[arg] = results[i];
}
