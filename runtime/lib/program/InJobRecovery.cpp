//===- InJobRecovery.cpp - survivors keep their processes and state -------===//

#include "InJobRecovery.h"

#include "Checkpointing.h"
#include "core/Faults.h"

#include "rtxrt/checkpoint/Checkpoint.h"
#include "rtxrt/checkpoint/Wal.h"
#include "rtxrt/elastic/LaunchEnvironment.h"
#include "rtxrt/program/Arguments.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

using namespace rtxrt;
using namespace rtxrt::program;

RecoveryMode RecoveryMode::of(const LaunchHandoff &handoff) {
  RecoveryMode mode;
  mode.inJob = handoff.inJob;
  mode.epoch = handoff.recoverEpoch;
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

/// The hash of every piece of state this rank holds, whole (not the blocks
/// it writes to a checkpoint): replicas have equal hashes.
static uint64_t localStateHash(const ProgramSpec &spec,
                               const ProgramDevice &device,
                               const std::vector<Tensor> &args) {
  wal::StateHash hash;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    std::string key = stateKeyOf(spec.args[i]);
    if (key.empty() || !args[i].defined())
      continue;
    Tensor host = device.toHost(args[i]);
    hash.add(key, {}, host.raw(), host.nbytes());
  }
  return hash.value();
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
    healing.why = "no surviving rank holds every lost block of the state";
    return healing;
  }
  std::vector<int64_t> world(steps.size());
  bool anyHealed = false;
  for (size_t r = 0; r < world.size(); ++r) {
    world[r] = static_cast<int64_t>(r);
    anyHealed = anyHealed || sources[r] != world[r];
  }
  if (!anyHealed)
    return healing;
  int64_t self = groups.rank();
  Communicator &comm = groups.communicator();
  // Every piece of state, tagged by its argument's index; a source sends to
  // each rank it heals, a healed rank receives from its source.
  std::vector<std::pair<size_t, Completion>> receives;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec &arg = spec.args[i];
    if (stateKeyOf(arg).empty())
      continue;
    std::string what = "the state '" + stateKeyOf(arg) + "' (in-job recovery)";
    for (size_t r = 0; r < world.size(); ++r) {
      int64_t q = sources[r];
      if (q == static_cast<int64_t>(r))
        continue;
      // Each send completes before the next, as the healed rank posts its
      // receives one by one: NCCL matches sends with receives only when
      // both sides group them alike. A source never receives here, so the
      // wait cannot deadlock.
      if (q == self)
        comm.send(world, self, static_cast<int64_t>(r), static_cast<int64_t>(i),
                  device.toHost(args[i]), what)
            .get();
      if (static_cast<int64_t>(r) == self)
        receives.push_back(
            {i, comm.recv(world, self, q, static_cast<int64_t>(i),
                          args[i].shape(), args[i].dtype(), what)});
    }
  }
  for (auto &[i, completion] : receives) {
    Tensor piece = completion.get();
    if (Faults::get().healFlip && i == receives.front().first) {
      piece = device.toHost(piece);
      static_cast<unsigned char *>(piece.raw())[0] ^= 1;
    }
    args[i] = device.toDevice(piece);
  }
  healing.received = static_cast<int64_t>(receives.size());
  healing.source = sources[self];
  // A healed rank holds what its source holds, or the transfer went wrong
  // without an error: each rank hashes its state, and every rank checks
  // every healed one against its source (the same verdict everywhere).
  std::vector<uint64_t> hashes = groups.exchangeWords(
      localStateHash(spec, device, args),
      "the hash of each rank's state after healing (in-job recovery)");
  for (size_t r = 0; r < world.size(); ++r) {
    int64_t q = sources[r];
    if (q != static_cast<int64_t>(r) && hashes[r] != hashes[q])
      throw Error("in-job recovery: rank " + std::to_string(r) +
                  " received the state of step " +
                  std::to_string(healing.stepsDone) + " from rank " +
                  std::to_string(q) +
                  ", but their states' hashes differ after the transfer");
  }
  return healing;
}

void rtxrt::program::checkHealedHash(
    ProcessGroups &groups, const Healing &healed, int64_t hashedStep,
    uint64_t hashedState, const std::function<uint64_t()> &stateHash) {
  int64_t step = groups.exchangeFlags(
      hashedStep, "the step each rank hashed last")[healed.leader];
  uint64_t expected = groups.exchangeWords(
      hashedState, "the state hash each rank logged last")[healed.leader];
  if (step != healed.stepsDone) {
    // The loss came while that step's hash was summed over the ranks.
    if (groups.rank() == 0)
      std::printf("recover: no state hash was logged after step %lld (the "
                  "loss came first): the healed state is not compared with "
                  "the log\n",
                  static_cast<long long>(healed.stepsDone));
    return;
  }
  uint64_t now = stateHash();
  if (now != expected)
    throw Error("in-job recovery: the healed state of step " +
                std::to_string(step) + " differs from the state hashed after " +
                "that step (--deterministic): a survivor's state changed " +
                "after its last step, or a transfer went wrong");
  if (groups.rank() == 0)
    std::printf("recover: the healed state hashes as logged after step %lld\n",
                static_cast<long long>(step));
}

/// Waits until every one of `writers` said on the board that it wrote its
/// part of the shrink's checkpoint; why not (a rank that could not, or the
/// time passed), or empty.
static std::string awaitSurvivorParts(EpochBoard &board, int64_t epoch,
                                      const std::vector<int64_t> &writers,
                                      double timeoutSeconds) {
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
  for (int64_t r : writers) {
    std::optional<std::string> said;
    while (!(said = board.savedBy(epoch, r))) {
      if (std::chrono::steady_clock::now() > deadline)
        return "rank " + std::to_string(r) + " did not write its part " +
               "within " + std::to_string(int(timeoutSeconds)) + " s";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!said->empty())
      return "rank " + std::to_string(r) +
             " could not write its part: " + *said;
  }
  return "";
}

/// Commits the survivors' checkpoint of `step` (`parts` writers) and
/// applies --keep-checkpoints to the folder.
static void
commitShrinkSave(const CheckpointFlags &flags, int64_t step, size_t parts,
                 const std::map<std::string, std::string> &metadata) {
  checkpoint::commitCheckpoint(flags.dir, step, static_cast<int64_t>(parts),
                               metadata);
  checkpoint::Retention retention(flags.dir, flags.keep);
  retention.committedHere(step);
  retention.apply();
}

ShrinkSave rtxrt::program::saveForShrink(
    const ProgramSpec &whole, const ProgramSpec &spec,
    const ProgramDevice &device, const std::vector<Tensor> &args,
    const CheckpointFlags &flags, EpochBoard &board, int64_t epoch,
    int64_t rank, double timeoutSeconds,
    const std::function<std::map<std::string, std::string>(int64_t)>
        &metadata) {
  ShrinkSave save;
  std::vector<int64_t> survivors =
      board.shrinking(epoch).value_or(std::vector<int64_t>());
  // Each rank's steps, from the survivors' reports; -1 for the lost.
  std::vector<int64_t> steps(whole.mesh.numRanks(), -1);
  for (int64_t r : survivors)
    if (r >= 0 && r < static_cast<int64_t>(steps.size()))
      if (std::optional<LostReport> report = board.lost(epoch, r))
        steps[r] = report->stepsDone;
  save.step = *std::max_element(steps.begin(), steps.end());
  // Decisions every survivor takes alike are told by the first.
  save.speaks = !survivors.empty() && survivors.front() == rank;
  if (flags.dir.empty()) {
    save.why = "the program has no --checkpoint to save into";
    return save;
  }
  if (save.step < 0) {
    save.why = "no survivor's report is in the store";
    return save;
  }
  std::vector<int64_t> sources = healSources(whole, steps);
  for (size_t r = 0; r < sources.size(); ++r)
    if (sources[r] < 0) {
      save.why = "no survivor holds every block of rank " + std::to_string(r) +
                 "'s state (ZeRO shards, or tensor-parallel state without a "
                 "replica)";
      return save;
    }
  std::vector<std::string> ignored;
  auto latest =
      checkpoint::findLatest(flags.dir, checkpoint::Verify::Manifest, &ignored);
  if (latest && latest->step >= save.step) {
    save.committed = true;
    save.why = "step " + std::to_string(save.step) + " is committed already";
    return save;
  }
  std::vector<int64_t> writers;
  for (int64_t r : survivors)
    if (r >= 0 && r < static_cast<int64_t>(steps.size()) &&
        steps[r] == save.step)
      writers.push_back(r);
  save.speaks = rank == writers.front();
  if (std::find(writers.begin(), writers.end(), rank) == writers.end()) {
    save.why = "this rank holds an older step";
    return save;
  }
  std::string error;
  try {
    writeSurvivorPart(spec, device, args, flags.dir, save.step, rank, writers);
  } catch (const std::exception &e) {
    error = e.what();
  }
  board.saved(epoch, rank, error);
  if (!error.empty()) {
    save.speaks = true;
    save.why = error;
    return save;
  }
  if (rank != writers.front())
    return save;
  // The first writer commits once every writer has written (or names the
  // one that could not).
  save.why = awaitSurvivorParts(board, epoch, writers, timeoutSeconds);
  if (!save.why.empty())
    return save;
  try {
    commitShrinkSave(flags, save.step, writers.size(), metadata(save.step));
    save.committed = true;
  } catch (const std::exception &e) {
    save.why = e.what();
  }
  return save;
}
