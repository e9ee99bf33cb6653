//===- InJobRecovery.cpp - survivors keep their processes and state -------===//

#include "InJobRecovery.h"

#include "rtxrt/Arguments.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

using namespace rtxrt;
using namespace rtxrt::program;

RecoveryMode RecoveryMode::fromEnvironment() {
  RecoveryMode mode;
  const char *recover = std::getenv("RTX_RECOVER");
  std::string value = recover ? recover : "";
  if (value == "in-job")
    mode.inJob = true;
  else if (!value.empty() && value != "restart")
    throw Error("RTX_RECOVER is '" + value + "': use in-job or restart");
  if (const char *epoch = std::getenv("RTX_RECOVER_EPOCH")) {
    char *end = nullptr;
    long long parsed = std::strtoll(epoch, &end, 10);
    if (!*epoch || *end || parsed < 0)
      throw Error(std::string("RTX_RECOVER_EPOCH is '") + epoch +
                  "': a number >= 0");
    mode.epoch = parsed;
  }
  return mode;
}

std::vector<int64_t>
rtxrt::program::healSources(const ProgramSpec &spec,
                            const std::vector<int64_t> &steps) {
  const MeshLayout &mesh = spec.mesh;
  // The axes that tell two ranks' state apart: any that splits a piece of
  // state (or holds partial sums of one), and the pipeline's stages. A
  // flat buffer (ZeRO) is split over the axes of its layout, which the
  // sharding does not show: no replica is assumed.
  // Every stage's state counts, so that every rank decides the same.
  std::set<std::string> distinguishing;
  bool flat = false;
  auto look = [&](const std::vector<ArgSpec> &args) {
    for (const ArgSpec &arg : args) {
      if (stateKeyOf(arg).empty())
        continue;
      flat = flat || !arg.members.empty();
      for (const auto &dim : arg.sharding.dims)
        distinguishing.insert(dim.begin(), dim.end());
      distinguishing.insert(arg.sharding.partial.begin(),
                            arg.sharding.partial.end());
    }
  };
  look(spec.args);
  for (const PipelineStage &stage : spec.stages)
    look(stage.args);
  if (!spec.pipelineAxis.empty())
    distinguishing.insert(spec.pipelineAxis);
  int64_t best = *std::max_element(steps.begin(), steps.end());
  std::vector<int64_t> sources(steps.size(), -1);
  for (int64_t r = 0; r < static_cast<int64_t>(steps.size()); ++r) {
    if (steps[r] == best) {
      sources[r] = r;
      continue;
    }
    if (flat)
      continue;
    std::vector<int64_t> mine = mesh.coordinates(r);
    for (int64_t q = 0; q < static_cast<int64_t>(steps.size()); ++q) {
      if (steps[q] != best)
        continue;
      std::vector<int64_t> theirs = mesh.coordinates(q);
      bool same = true;
      for (const std::string &axis : distinguishing) {
        size_t a = mesh.axisIndex(axis);
        same = same && mine[a] == theirs[a];
      }
      if (same) {
        sources[r] = q;
        break;
      }
    }
  }
  return sources;
}

Healing rtxrt::program::healFromPeers(
    const ProgramSpec &whole, const ProgramSpec &spec, ProcessGroups &groups,
    const ProgramDevice &device, std::vector<Tensor> &args, int64_t stepsDone) {
  std::vector<int64_t> steps = groups.exchangeFlags(
      stepsDone, "the steps each rank holds (in-job recovery)");
  Healing healing;
  healing.stepsDone = *std::max_element(steps.begin(), steps.end());
  healing.leader = std::max_element(steps.begin(), steps.end()) - steps.begin();
  std::vector<int64_t> sources = healSources(whole, steps);
  if (std::find(sources.begin(), sources.end(), -1) != sources.end()) {
    healing.needsCheckpoint = true;
    return healing;
  }
  std::vector<int64_t> world(steps.size());
  for (size_t r = 0; r < world.size(); ++r)
    world[r] = static_cast<int64_t>(r);
  int64_t self = groups.rank();
  Communicator &comm = groups.communicator();
  // Every piece of state, tagged by its argument's index; a source sends to
  // each rank it heals, a healed rank receives from its source.
  std::vector<std::pair<size_t, Completion>> receives;
  std::vector<Completion> sends;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec &arg = spec.args[i];
    if (stateKeyOf(arg).empty())
      continue;
    std::string what = "the state '" + stateKeyOf(arg) + "' (in-job recovery)";
    for (size_t r = 0; r < world.size(); ++r) {
      int64_t q = sources[r];
      if (q == static_cast<int64_t>(r))
        continue;
      if (q == self)
        sends.push_back(comm.send(world, self, static_cast<int64_t>(r),
                                  static_cast<int64_t>(i),
                                  device.toHost(args[i]), what));
      if (static_cast<int64_t>(r) == self)
        receives.push_back(
            {i, comm.recv(world, self, q, static_cast<int64_t>(i),
                          args[i].shape(), args[i].dtype(), what)});
    }
  }
  for (auto &[i, completion] : receives)
    args[i] = device.toDevice(completion.get());
  for (Completion &completion : sends)
    completion.get();
  healing.received = static_cast<int64_t>(receives.size());
  healing.source = sources[self];
  return healing;
}
