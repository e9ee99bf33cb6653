//===- UserTensors.cpp - a step's results in the user's tensors -----------===//

#include "UserTensors.h"

#include "rtxrt/core/Block.h"

#include <map>

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Tensor;

std::vector<std::string> mlir::rtx::stepResultKeys(const StepPrograms &step) {
  std::vector<std::string> keys(step.numStepResults());
  for (int64_t i = 0; i < step.numStepResults(); ++i)
    if (!step.isFlatMember(i)) {
      auto [c, j] = step.ownerOf(i);
      keys[i] = step.programs()[c].program.results[j].stateKey;
    }
  for (const RankProgram &p : step.programs())
    for (const ProgramResult &r : p.program.results)
      for (const ProgramResult &member : r.members)
        if (member.index >= 0)
          keys[member.index] = member.stateKey;
  return keys;
}

std::map<std::string, rtxrt::PartOf>
mlir::rtx::paramParts(const StepPrograms &step) {
  std::map<std::string, rtxrt::PartOf> parts;
  auto add = [&](const rtxrt::ArgSpec &arg) {
    if (arg.kind == rtxrt::ArgSpec::Param && !arg.partOf.name.empty())
      parts[arg.name] = arg.partOf;
  };
  for (const RankProgram &p : step.programs())
    for (const rtxrt::ArgSpec &arg : p.args) {
      add(arg);
      for (const rtxrt::ArgSpec &member : arg.members)
        add(member);
    }
  return parts;
}

namespace {
/// Results that are parts of one user tensor: KIND:NAME's parts.
struct Group {
  size_t first;
  rtxrt::PartOf part; // the user tensor (name, dim, size)
  std::vector<std::pair<size_t, int64_t>> members; // (result, offset)
};
} // namespace

std::vector<Tensor>
mlir::rtx::joinUserParts(const std::vector<Tensor> &results,
                         const std::vector<std::string> &keys,
                         const std::map<std::string, rtxrt::PartOf> &parts) {
  // "exp_avg:c_attn.weight@1" -> ("exp_avg", the part of c_attn.weight@1).
  std::map<std::string, Group> groups;
  std::vector<const Group *> groupOf(results.size(), nullptr);
  for (size_t i = 0; i < results.size() && i < keys.size(); ++i) {
    auto colon = keys[i].find(':');
    if (colon == std::string::npos)
      continue;
    auto it = parts.find(keys[i].substr(colon + 1));
    if (it == parts.end())
      continue;
    std::string user = keys[i].substr(0, colon) + ":" + it->second.name;
    auto [g, fresh] = groups.try_emplace(user, Group{i, it->second, {}});
    g->second.members.push_back({i, it->second.offset});
    groupOf[i] = &g->second;
  }
  std::vector<Tensor> joined;
  for (size_t i = 0; i < results.size(); ++i) {
    const Group *g = groupOf[i];
    if (!g) {
      joined.push_back(results[i]);
      continue;
    }
    if (g->first != i)
      continue;
    rtxrt::Shape shape = results[i].shape();
    int64_t total = 0;
    for (auto [r, offset] : g->members)
      total += results[r].shape()[g->part.dim];
    shape[g->part.dim] = total;
    Tensor whole(shape, results[i].dtype());
    for (auto [r, offset] : g->members) {
      std::vector<int64_t> at(shape.size(), 0);
      at[g->part.dim] = offset;
      rtxrt::accumulateBlock(whole, results[r], at);
    }
    joined.push_back(whole);
  }
  return joined;
}
