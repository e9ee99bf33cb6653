//===- InProcessCommunicatorTest.cpp - rtx-run's ranks as threads ---------===//
//
// What rtx-run relies on from the in-process world: its ranks reach one
// another through StepContext as emitted programs' ranks do over Gloo, and
// a wait that no rank can satisfy is reported as a deadlock naming what
// each rank waits on, never a hang. Also the state feedback that the step
// loop and rtx-run share.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/comm/InProcessCommunicator.h"
#include "rtxrt/program/StepContext.h"
#include "rtxrt/program/StateFeedback.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

using namespace rtxrt;

namespace {

/// Runs `body(rank, context)` on each rank of `mesh` on its own thread;
/// returns each rank's error ("" when it succeeded).
std::vector<std::string>
runRanks(const MeshLayout &mesh,
         const std::function<void(int64_t, StepContext &)> &body) {
  int64_t n = mesh.numRanks();
  InProcessWorld world(n, /*timeoutSeconds=*/30);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < n; ++rank)
    threads.emplace_back([&, rank] {
      try {
        std::unique_ptr<Communicator> comm = world.communicator(rank);
        StepContext context(rank, mesh, *comm);
        body(rank, context);
        context.finishStep();
        world.finish(rank);
      } catch (const std::exception &error) {
        errors[rank] = error.what();
        world.abort(rank, error.what());
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  return errors;
}

TEST(InProcessCommunicator, CollectivesAndMessagesThroughStepContext) {
  MeshLayout mesh({"dp"}, {2});
  std::vector<double> sums(2), received(2);
  std::vector<std::string> errors = runRanks(mesh, [&](int64_t rank,
                                                       StepContext &context) {
    Tensor mine = Tensor::scalar(double(rank + 1), DType::F32);
    sums[rank] = context
                     .collective("all_reduce", {"dp"},
                                 Collective::allReduce(ReduceKind::Sum), mine)
                     .getAsDouble(0);
    int64_t peer = 1 - rank;
    context.send("send", {"dp"}, peer, /*tag=*/7, mine);
    received[rank] =
        context.recv("recv", {"dp"}, peer, 7, {}, DType::F32).getAsDouble(0);
  });
  EXPECT_EQ(errors, std::vector<std::string>(2));
  EXPECT_EQ(sums, std::vector<double>({3, 3}));
  EXPECT_EQ(received, std::vector<double>({2, 1}));
}

TEST(InProcessCommunicator, AReceiveNobodySendsIsADeadlock) {
  MeshLayout mesh({"pp"}, {2});
  std::vector<std::string> errors =
      runRanks(mesh, [&](int64_t, StepContext &context) {
        // Each rank receives from itself: the world holds the message, so
        // the wait is one it can see.
        context.recv("rtx.recv over pp", {"pp"}, 0, 0, {}, DType::F32);
      });
  bool reported = false;
  for (const std::string &error : errors)
    reported |= error.rfind("deadlock: no rank can make progress", 0) == 0 &&
                error.find("waits in rtx.recv over pp") != std::string::npos;
  EXPECT_TRUE(reported) << errors[0] << "\n" << errors[1];
}

TEST(InProcessCommunicator, DifferentCollectivesAreAMismatch) {
  MeshLayout mesh({"dp"}, {2});
  std::vector<std::string> errors =
      runRanks(mesh, [&](int64_t rank, StepContext &context) {
        Tensor t = Tensor::scalar(1.0, DType::F32);
        context.collective(
            rank == 0 ? "rtx.all_reduce at a" : "rtx.all_gather at b", {"dp"},
            rank == 0 ? Collective::allReduce(ReduceKind::Sum)
                      : Collective::allGather(0),
            rank == 0 ? t : Tensor(Shape{1}, DType::F32));
      });
  bool mismatch = false;
  for (const std::string &error : errors)
    mismatch |= error.find("collective mismatch") != std::string::npos;
  EXPECT_TRUE(mismatch) << errors[0] << "\n" << errors[1];
}

TEST(StateFeedback, ResultsReplaceTheArgumentsWithTheirKey) {
  ArgSpec weight, moment, data;
  weight.kind = ArgSpec::Param;
  weight.name = "w"; // key param:w
  moment.kind = ArgSpec::State;
  moment.name = moment.state = "exp_avg:w";
  data.kind = ArgSpec::Input;
  data.name = "x";
  StateFeedback feedback({weight, moment, data},
                         {"", "exp_avg:w", "param:w", "unknown"});
  EXPECT_EQ(feedback.argumentOf(0), -1);
  EXPECT_EQ(feedback.argumentOf(1), 1);
  EXPECT_EQ(feedback.argumentOf(2), 0);
  EXPECT_EQ(feedback.argumentOf(3), -1);
  std::vector<Tensor> args = {Tensor::scalar(1, DType::F32),
                              Tensor::scalar(2, DType::F32),
                              Tensor::scalar(3, DType::F32)};
  feedback.apply(
      args, {Tensor::scalar(9, DType::F32), Tensor::scalar(20, DType::F32),
             Tensor::scalar(10, DType::F32), Tensor::scalar(99, DType::F32)});
  EXPECT_EQ(args[0].getAsDouble(0), 10);
  EXPECT_EQ(args[1].getAsDouble(0), 20);
  EXPECT_EQ(args[2].getAsDouble(0), 3);
}

} // namespace
