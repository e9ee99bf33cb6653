//===- Groups.cpp - ranks, rendezvous and process groups ------------------===//

#include "Groups.h"

#include "ClockSync.h"

#include "rtxrt/core/FlatBuffer.h"

#ifdef RTXRT_HAVE_GLOO
#include "comm/Liveness.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace rtxrt;
using namespace rtxrt::program;

Placement rtxrt::program::placementFromEnvironment() {
  Placement self;
  self.launch = readLaunchEnvironment(processEnvironment());
  self.rank = self.launch.rank;
  self.world = self.launch.world;
  self.localRank = self.launch.localRank;
  return self;
}

void rtxrt::program::checkPlacement(const ProgramSpec &spec,
                                    const Placement &self) {
  if (self.world != spec.mesh.numRanks())
    throw Error("this program was compiled for " +
                std::to_string(spec.mesh.numRanks()) +
                " ranks, but WORLD_SIZE is " + std::to_string(self.world) +
                (self.launch.launcher == "none" ||
                         self.launch.launcher == "rtx-launch" ||
                         self.launch.launcher == "RANK/WORLD_SIZE"
                     ? std::string()
                     : " (from " + self.launch.launcher + ")") +
                " (start it with rtx-launch -n " +
                std::to_string(spec.mesh.numRanks()) + ")");
  if (self.rank < 0 || self.rank >= self.world)
    throw Error("RANK " + std::to_string(self.rank) + " is outside [0, " +
                std::to_string(self.world) + ")");
}

ProgramDevice::ProgramDevice(const DeviceRuntime *runtime,
                             const Placement &self)
    : runtime_(runtime) {
  // A listed device is honoured or refused, never ignored.
  const DeviceChoice &listed = self.launch.device;
  if (!runtime_) {
    if (listed.listed && listed.kind != "cpu")
      throw Error(listed.source + " names " + listed.name + " for local rank " +
                  std::to_string(self.localRank) +
                  ", but this is a CPU program (build a GPU one with "
                  "rtx-translate --emit=cuda)");
    return;
  }
  if (listed.listed && listed.kind != "cuda")
    throw Error(listed.source + " names " + listed.name + " for local rank " +
                std::to_string(self.localRank) +
                ", but this program runs on GPUs: name cuda:N");
  std::string name =
      runtime_->selectDevice(listed.listed ? listed.index : self.localRank);
  if (self.rank == 0)
    std::printf("device: %s (%s)\n", name.c_str(), runtime_->name);
}

ProcessGroups::ProcessGroups(const ProgramSpec &spec, const Placement &self,
                             const ProgramDevice &device,
                             const Rendezvous &rendezvous,
                             double rendezvousSeconds,
                             double heartbeatBasis)
    : mesh_(spec.mesh),
      pipeline_(spec.pipelineAxis.empty()
                    ? PipelineCoordinates()
                    : PipelineCoordinates(spec.mesh, spec.pipelineAxis)),
      device_(device), rank_(self.rank) {
  for (int64_t r = 0; r < self.world; ++r)
    world_.push_back(r);
  if (self.world == 1) {
    comm_ = makeLocalCommunicator();
    return;
  }
  if (rendezvous.store.empty())
    throw Error(
        std::string("several ranks need a rendezvous store: pass --store "
                    "file:DIR or set RTX_STORE (rtx-launch --store does)") +
        (self.launch.launcher == "torchrun"
             ? "; torchrun's own store (MASTER_PORT) is a TCPStore, which "
               "rtx cannot use: across nodes set RTX_STORE=redis://HOST:PORT"
             : ""));
#ifdef RTXRT_HAVE_GLOO
  // Before the rendezvous, so that its timeout can name a missing rank.
  liveness_ = std::make_unique<detail::Liveness>(rendezvous, self.rank, self.world,
                                                 heartbeatBasis);
#endif
  std::vector<std::vector<int64_t>> groups;
  for (const auto &axes : spec.collectiveAxes)
    groups.push_back(spec.mesh.group(self.rank, axes));
  groups.push_back(world_);
  const DeviceRuntime *runtime = device.runtime();
  comm_ = runtime && runtime->makeCommunicator
              ? runtime->makeCommunicator(self.rank, self.world, rendezvous, groups,
                                          rendezvousSeconds)
              : makeGlooCommunicator(self.rank, self.world, rendezvous, groups,
                                     rendezvousSeconds);
}

// Out of line: Liveness is complete only here. The communicator goes first
// (members are destroyed in reverse order), while heartbeats still beat.
ProcessGroups::~ProcessGroups() = default;

void ProcessGroups::markProgress(int64_t steps) {
#ifdef RTXRT_HAVE_GLOO
  if (liveness_)
    liveness_->setProgress(steps);
#else
  (void)steps;
#endif
}

ClockOffset ProcessGroups::measureClockOffset() {
  return program::measureClockOffset(*comm_, world_, rank_);
}

double ProcessGroups::globalScalar(const Tensor &local,
                                   const Sharding &sharding,
                                   const std::string &what, int64_t owner) {
  std::vector<Tensor> all =
      comm_->exchange(world_, device_.toHost(local), what);
  double value = 0;
  for (int64_t r : world_)
    if (int64_t place = placeOf(r, owner);
        place >= 0 && isCanonicalReplica(sharding, mesh_, place))
      value += all[r].getAsDouble(0);
  return value;
}

std::vector<Tensor> ProcessGroups::gatherFlatOnRankZero(const Tensor &local,
                                                        const ResultSpec &flat,
                                                        const std::string &what,
                                                        int64_t owner) {
  std::vector<Tensor> shards =
      comm_->exchange(world_, device_.toHost(local), what);
  if (rank_ != 0)
    return {};
  std::vector<Tensor> members;
  for (size_t m = 0; m < flat.members.size(); ++m)
    members.push_back(assembleFlatMember(
        flat.flat, shards, mesh_, m, flat.members[m].sharding,
        flat.members[m].shape, flat.members[m].dtype,
        [&](int64_t r) { return placeOf(r, owner); }));
  return members;
}

Tensor ProcessGroups::gatherOnRankZero(const Tensor &local,
                                       const Shape &localShape,
                                       const Sharding &sharding,
                                       const std::string &what, int64_t owner) {
  std::vector<Tensor> all =
      comm_->exchange(world_, device_.toHost(local), what);
  if (rank_ != 0)
    return Tensor();
  Tensor global(localBlock(sharding, localShape, mesh_, 0).globalShape,
                local.dtype());
  for (int64_t r : world_)
    if (int64_t place = placeOf(r, owner);
        place >= 0 && isCanonicalReplica(sharding, mesh_, place))
      accumulateBlock(global, all[r],
                      localBlock(sharding, localShape, mesh_, place).offsets);
  return global;
}

std::vector<int64_t> ProcessGroups::exchangeFlags(int64_t mine,
                                                  const std::string &what) {
  std::vector<Tensor> all =
      comm_->exchange(world_, Tensor::scalar(double(mine), DType::I64), what);
  std::vector<int64_t> flags;
  for (int64_t r : world_)
    flags.push_back(static_cast<int64_t>(all[r].getAsDouble(0)));
  return flags;
}

std::vector<uint64_t> ProcessGroups::exchangeWords(uint64_t mine,
                                                   const std::string &what) {
  // Bit for bit: exchangeFlags passes values through a double.
  Tensor word = Tensor::uninitialized({}, DType::I64);
  std::memcpy(word.raw(), &mine, sizeof(mine));
  std::vector<uint64_t> words;
  for (const Tensor &theirs : comm_->exchange(world_, word, what)) {
    uint64_t value;
    std::memcpy(&value, theirs.raw(), sizeof(value));
    words.push_back(value);
  }
  return words;
}

uint64_t ProcessGroups::sumOverRanks(uint64_t mine, const std::string &what) {
  uint64_t sum = 0;
  for (uint64_t value : exchangeWords(mine, what))
    sum += value; // mod 2^64
  return sum;
}

int64_t ProcessGroups::firstFailedRank(bool ok, const std::string &what) {
  std::vector<int64_t> all = exchangeFlags(ok ? 1 : 0, what);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] == 0)
      return static_cast<int64_t>(r);
  return -1;
}
