//===- StepContextTest.cpp - started collectives, waits, send/recv --------===//
//
// What an emitted step relies on from StepContext: started collectives run
// on the communication thread in program order and before any later
// synchronous collective, a wait returns the result once, an operation
// never waited fails the step naming it, and a rank's messages to itself
// arrive by tag in order.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/program/Program.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

using namespace rtxrt;

namespace {

Tensor iota(Shape shape, float start = 0) {
  Tensor t(shape, DType::F32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

/// One rank that records the order in which ops reach the process group;
/// the first exchange is slow, so a missing drain would let a later
/// synchronous collective overtake it.
class RecordingCommunicator : public Communicator {
public:
  std::vector<Tensor> exchange(const std::vector<int64_t> &, const Tensor &t,
                               const std::string &what) override {
    if (calls.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(mutex);
    calls.push_back(what);
    return {t};
  }
  std::mutex mutex;
  std::vector<std::string> calls;
};

TEST(StepContextTest, StartedCollectivesRunInProgramOrderBeforeSyncOnes) {
  MeshLayout mesh({"dp"}, {1});
  RecordingCommunicator comm;
  StepContext ctx(0, mesh, comm);
  Tensor x = iota({2, 3});
  auto first = ctx.start("first", {"dp"}, Collective::allGather(0), x);
  auto second = ctx.start("second", {"dp"}, Collective::allToAll(1, 0), x);
  Tensor third =
      ctx.collective("third", {"dp"}, Collective::permute({0, 0}), x);
  EXPECT_EQ(comm.calls, (std::vector<std::string>{"first", "second", "third"}));
  // Waited out of order: each gives its own result.
  Tensor b = ctx.wait(second), a = ctx.wait(first);
  EXPECT_EQ(a.shape(), x.shape());
  EXPECT_EQ(b.data<float>()[4], 4.0f);
  EXPECT_EQ(third.data<float>()[5], 5.0f);
  EXPECT_NO_THROW(ctx.finishStep());
}

TEST(StepContextTest, AWaitIsOnce) {
  MeshLayout mesh({"dp"}, {1});
  auto comm = makeLocalCommunicator();
  StepContext ctx(0, mesh, *comm);
  auto pending = ctx.start("rtx.all_reduce_start at x.mlir:3", {"dp"},
                           Collective::allReduce(ReduceKind::Sum), iota({4}));
  EXPECT_EQ(ctx.wait(pending).data<float>()[3], 3.0f);
  EXPECT_THROW(ctx.wait(pending), Error);
}

TEST(StepContextTest, AnOperationNeverWaitedFailsTheStepNamingIt) {
  MeshLayout mesh({"dp"}, {1});
  auto comm = makeLocalCommunicator();
  StepContext ctx(0, mesh, *comm);
  (void)ctx.start("rtx.all_gather_start at x.mlir:7", {"dp"},
                  Collective::allGather(0), iota({4}));
  try {
    ctx.finishStep();
    FAIL() << "finishStep accepted a started collective that was never waited";
  } catch (const Error &error) {
    EXPECT_NE(
        std::string(error.what()).find("rtx.all_gather_start at x.mlir:7"),
        std::string::npos)
        << error.what();
  }
  // The next step starts clean.
  EXPECT_NO_THROW(ctx.finishStep());
}

TEST(StepContextTest, MessagesToItselfArriveByTagInOrder) {
  MeshLayout mesh({"pp"}, {1});
  auto comm = makeLocalCommunicator();
  StepContext ctx(0, mesh, *comm);
  ctx.send("send a", {"pp"}, 0, 7, iota({2}, 10));
  auto sent = ctx.sendStart("send b", {"pp"}, 0, 7, iota({2}, 20));
  ctx.send("send c", {"pp"}, 0, 1, iota({2}, 30));
  auto b = ctx.recvStart("recv", {"pp"}, 0, 1, {2}, DType::F32);
  Tensor a = ctx.recv("recv", {"pp"}, 0, 7, {2}, DType::F32);
  EXPECT_EQ(a.data<float>()[0], 10.0f);
  EXPECT_EQ(ctx.wait(b).data<float>()[0], 30.0f);
  EXPECT_EQ(ctx.recv("recv", {"pp"}, 0, 7, {2}, DType::F32).data<float>()[1],
            21.0f);
  ctx.wait(sent);
  EXPECT_NO_THROW(ctx.finishStep());
}

TEST(StepContextTest, BadPeersAndMissingMessagesAreErrors) {
  MeshLayout mesh({"pp"}, {1});
  auto comm = makeLocalCommunicator();
  StepContext ctx(0, mesh, *comm);
  EXPECT_THROW(ctx.send("send", {"pp"}, 1, 0, iota({2})), Error);
  EXPECT_THROW(ctx.recv("recv", {"pp"}, 0, 5, {2}, DType::F32), Error);
  ctx.send("send", {"pp"}, 0, 0, iota({2}));
  // A message of another shape than the receive expects.
  EXPECT_THROW(ctx.recv("recv", {"pp"}, 0, 0, {3}, DType::F32), Error);
}

} // namespace
