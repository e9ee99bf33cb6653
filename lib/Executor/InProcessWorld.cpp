//===- InProcessWorld.cpp - ranks as threads, with collectives ------------===//

#include "rtx/Executor/InProcessWorld.h"

#include <sstream>

using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Tensor;

InProcessWorld::InProcessWorld(int64_t numRanks, double timeoutSeconds)
    : numRanks_(numRanks), timeout_(timeoutSeconds), sequence_(numRanks),
      waitingOn_(numRanks), readiness_(numRanks), finished_(numRanks, false) {}

bool InProcessWorld::isDeadlocked() const {
  bool anyWaiting = false;
  for (int64_t r = 0; r < numRanks_; ++r) {
    if (finished_[r])
      continue;
    if (waitingOn_[r].empty() || readiness_[r]())
      return false;
    anyWaiting = true;
  }
  return anyWaiting;
}

std::string InProcessWorld::describeWaiters() const {
  std::ostringstream os;
  for (int64_t r = 0; r < numRanks_; ++r) {
    os << "\n  rank " << r << ": ";
    if (finished_[r])
      os << "finished";
    else if (waitingOn_[r].empty())
      os << "running";
    else
      os << "waits in " << waitingOn_[r];
  }
  return os.str();
}

void InProcessWorld::waitFor(Lock &lock, int64_t rank, const std::string &where,
                             std::function<bool()> ready) {
  waitingOn_[rank] = where;
  readiness_[rank] = ready;
  auto clear = [&] {
    waitingOn_[rank].clear();
    readiness_[rank] = nullptr;
  };
  auto start = std::chrono::steady_clock::now();
  while (!ready()) {
    if (aborted_) {
      clear();
      throw Error(abortMessage_);
    }
    if (isDeadlocked()) {
      std::string report = "deadlock: no rank can make progress" +
                           describeWaiters();
      aborted_ = true;
      abortMessage_ = report;
      clear();
      changed_.notify_all();
      throw Error(report);
    }
    if (std::chrono::steady_clock::now() - start > timeout_) {
      std::ostringstream os;
      os << "rank " << rank << " timed out after " << timeout_.count()
         << " s waiting in " << where << describeWaiters();
      aborted_ = true;
      abortMessage_ = os.str();
      clear();
      changed_.notify_all();
      throw Error(abortMessage_);
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  clear();
}

std::vector<Tensor> InProcessWorld::exchange(int64_t rank,
                                             const std::vector<int64_t> &group,
                                             const std::string &signature,
                                             const Tensor &input,
                                             const std::string &where) {
  int64_t index = -1;
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank)
      index = static_cast<int64_t>(i);
  if (index < 0)
    throw Error("rank " + std::to_string(rank) + " is not in its own group");

  Lock lock(mutex_);
  int64_t seq = sequence_[rank][group]++;
  auto key = std::make_pair(group, seq);
  Slot &slot = slots_[key];
  if (slot.arrived == 0) {
    slot.signature = signature;
    slot.firstWhere = where;
    slot.inputs.resize(group.size());
  } else if (slot.signature != signature) {
    std::ostringstream os;
    os << "collective mismatch: rank " << rank << " entered " << where
       << " while rank " << group.front() << "'s group entered "
       << slot.firstWhere << " (" << slot.signature << " vs " << signature
       << ")";
    aborted_ = true;
    abortMessage_ = os.str();
    changed_.notify_all();
    throw Error(abortMessage_);
  }
  slot.inputs[index] = input;
  ++slot.arrived;
  changed_.notify_all();
  int64_t size = static_cast<int64_t>(group.size());
  waitFor(lock, rank, where, [&slot, size] { return slot.arrived == size; });
  std::vector<Tensor> all = slot.inputs;
  if (++slot.departed == size)
    slots_.erase(key);
  return all;
}

void InProcessWorld::send(int64_t from, int64_t to, int64_t tag,
                          const Tensor &value) {
  Lock lock(mutex_);
  mailboxes_[{from, to, tag}].push_back(value.clone());
  changed_.notify_all();
}

Tensor InProcessWorld::recv(int64_t rank, int64_t from, int64_t tag,
                            const std::string &where) {
  Lock lock(mutex_);
  auto &box = mailboxes_[{from, rank, tag}];
  waitFor(lock, rank, where, [&box] { return !box.empty(); });
  Tensor value = box.front();
  box.pop_front();
  return value;
}

void InProcessWorld::finish(int64_t rank) {
  Lock lock(mutex_);
  finished_[rank] = true;
  changed_.notify_all();
}

void InProcessWorld::abort(int64_t rank, const std::string &message) {
  Lock lock(mutex_);
  finished_[rank] = true;
  if (!aborted_) {
    aborted_ = true;
    abortMessage_ = "stopped because rank " + std::to_string(rank) +
                    " failed: " + message;
  }
  changed_.notify_all();
}
