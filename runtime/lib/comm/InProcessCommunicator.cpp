//===- InProcessCommunicator.cpp - ranks as threads of one process --------===//

#include "rtxrt/comm/InProcessCommunicator.h"

#include <sstream>

using namespace rtxrt;

namespace {
/// One rank's view of the world. Collectives are the Communicator's
/// defaults over exchange(), as on Gloo's host groups.
class InProcessCommunicator : public Communicator {
public:
  InProcessCommunicator(InProcessWorld &world, int64_t rank)
      : world_(world), rank_(rank) {}

  std::vector<Tensor> exchange(const std::vector<int64_t> &group,
                               const Tensor &input,
                               const std::string &what) override {
    return world_.exchange(rank_, group, signatureOf(what, input), input, what);
  }

  bool messagesToSelf() const override { return true; }

  Completion send(const std::vector<int64_t> &group, int64_t /*index*/,
                  int64_t peer, int64_t tag, const Tensor &input,
                  const std::string & /*what*/) override {
    world_.send(rank_, group.at(peer), tag, input);
    return completed(Tensor());
  }

  /// Receives now, on the calling thread: the world sees the wait and can
  /// tell a deadlock from a rank that is still computing.
  Completion recv(const std::vector<int64_t> &group, int64_t /*index*/,
                  int64_t peer, int64_t tag, const Shape &shape, DType dtype,
                  const std::string &what) override {
    Tensor message = world_.recv(rank_, group.at(peer), tag, what);
    if (message.shape() != shape || message.dtype() != dtype)
      throw Error(
          what + ": expected " + shapeToString(shape) + " " + dtypeName(dtype) +
          ", but the message under tag " + std::to_string(tag) + " is " +
          shapeToString(message.shape()) + " " + dtypeName(message.dtype()));
    return completed(std::move(message));
  }

private:
  /// What ranks meeting in one collective must agree on: the op as `what`
  /// names it (without its location: pipeline stages run one collective
  /// from different functions) and the input's type.
  static std::string signatureOf(const std::string &what, const Tensor &input) {
    std::string op = what.substr(0, what.rfind(" at "));
    return op + " : " + shapeToString(input.shape()) + " " +
           dtypeName(input.dtype());
  }

  InProcessWorld &world_;
  int64_t rank_;
};
} // namespace

InProcessWorld::InProcessWorld(int64_t numRanks, double timeoutSeconds)
    : numRanks_(numRanks), timeout_(timeoutSeconds), sequence_(numRanks),
      waitingOn_(numRanks), readiness_(numRanks), finished_(numRanks, false) {}

std::unique_ptr<Communicator> InProcessWorld::communicator(int64_t rank) {
  if (rank < 0 || rank >= numRanks_)
    throw Error("rank " + std::to_string(rank) + " is outside the " +
                std::to_string(numRanks_) + " ranks of the process");
  return std::make_unique<InProcessCommunicator>(*this, rank);
}

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

void InProcessWorld::fail(const std::string &message) {
  aborted_ = true;
  abortMessage_ = message;
  changed_.notify_all();
  throw CommunicationError(message);
}

void InProcessWorld::waitFor(Lock &lock, int64_t rank, const std::string &where,
                             std::function<bool()> ready) {
  waitingOn_[rank] = where;
  readiness_[rank] = ready;
  // Cleared however the wait ends, so that reports never name a stale wait.
  struct Clear {
    std::string &where;
    std::function<bool()> &ready;
    ~Clear() {
      where.clear();
      ready = nullptr;
    }
  } clear{waitingOn_[rank], readiness_[rank]};
  auto start = std::chrono::steady_clock::now();
  while (!ready()) {
    if (aborted_)
      throw CommunicationError(abortMessage_);
    if (isDeadlocked())
      fail("deadlock: no rank can make progress" + describeWaiters());
    if (std::chrono::steady_clock::now() - start > timeout_) {
      std::ostringstream os;
      os << "rank " << rank << " timed out after " << timeout_.count()
         << " s waiting in " << where << describeWaiters();
      fail(os.str());
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
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
    abortMessage_ =
        "stopped because rank " + std::to_string(rank) + " failed: " + message;
  }
  changed_.notify_all();
}
