//===- PipelineScheduleTest.cpp - schedules as data, and their simulator --===//
//
// The generated schedules against the textbook: 1F1B's and GPipe's step
// count (m + p - 1)(f + b) and bubble (p - 1)/(m + p - 1), their peak live
// activations (1F1B: p - r on rank r; GPipe: m), ZB-H1's bubble at most
// half of 1F1B's; the text form round-trips; hand-written broken schedules
// get the diagnostics that name the rank, the action and why.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

using namespace mlir::rtx::pipeline;

namespace {

Schedule generated(ScheduleKind kind, int64_t p, int64_t m, int64_t v = 1) {
  GenerateResult g = generateSchedule(kind, p, m, v);
  EXPECT_TRUE(g.schedule) << g.error;
  return g.schedule ? *g.schedule : Schedule();
}

std::vector<std::string> messages(const SimulationResult &r) {
  std::vector<std::string> out;
  for (const Diagnostic &d : r.errors)
    out.push_back(d.str());
  return out;
}

Schedule parsed(const std::string &text) {
  ParseResult r = parseSchedule(text);
  EXPECT_TRUE(r.schedule) << (r.errors.empty() ? "" : r.errors[0].str());
  return r.schedule ? *r.schedule : Schedule();
}

} // namespace

TEST(PipelineScheduleTest, OneFOneBAndGPipeMatchTheTextbook) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (auto [p, m] :
         {std::pair<int64_t, int64_t>{2, 2}, {2, 8}, {4, 4}, {4, 8}, {4, 16}}) {
      SimulationResult r = simulate(generated(kind, p, m));
      ASSERT_TRUE(r.errors.empty()) << messages(r)[0];
      // Forward 1, backward 2 per stage and micro-batch.
      EXPECT_DOUBLE_EQ(r.makespan, double((m + p - 1) * 3))
          << scheduleKindName(kind) << " p=" << p << " m=" << m;
      EXPECT_NEAR(r.bubbleFraction(), formulaBubbleFraction(p, m), 1e-12);
      for (int64_t stage = 0; stage < p; ++stage)
        EXPECT_EQ(r.peakActivations[stage],
                  kind == ScheduleKind::GPipe ? m : std::min(m, p - stage));
    }
}

TEST(PipelineScheduleTest, OneFOneBOnFourRanksReadsAsExpected) {
  Schedule s = generated(ScheduleKind::OneFOneB, 4, 4);
  // Rank 2: one warm-up forward, then forward/backward in turn, the sends
  // and receives around them, its gradient reduction after the last
  // backward, and the optimizer.
  EXPECT_EQ(s.str().substr(s.str().find("rank 2:")),
            "rank 2: 2RECV_F0 2F0 2SEND_F0 2RECV_F1 2F1 2SEND_F1 2RECV_B0 2B0 "
            "2SEND_B0 2RECV_F2 2F2 2SEND_F2 2RECV_B1 2B1 2SEND_B1 2RECV_F3 2F3 "
            "2SEND_F3 2RECV_B2 2B2 2SEND_B2 2RECV_B3 2B3 2SEND_B3 "
            "2REDUCE_GRAD OPTIMIZER\n"
            "rank 3: 3RECV_F0 3F0 3B0 3SEND_B0 3RECV_F1 3F1 3B1 3SEND_B1 "
            "3RECV_F2 3F2 3B2 3SEND_B2 3RECV_F3 3F3 3B3 3SEND_B3 3REDUCE_GRAD "
            "OPTIMIZER\n");
}

TEST(PipelineScheduleTest, InterleavedShrinksTheBubble) {
  for (auto [p, m, v] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 4, 2}, {4, 8, 2}, {4, 8, 4}}) {
    Schedule s = generated(ScheduleKind::Interleaved, p, m, v);
    EXPECT_EQ(s.stages(), p * v);
    SimulationResult r = simulate(s);
    ASSERT_TRUE(r.errors.empty()) << messages(r)[0];
    SimulationResult plain = simulate(generated(ScheduleKind::OneFOneB, p, m));
    EXPECT_LT(r.bubbleFraction(), plain.bubbleFraction())
        << "p=" << p << " m=" << m << " v=" << v;
    // Megatron's (p - 1) / (v m + p - 1), reached exactly with uniform
    // stages.
    EXPECT_NEAR(r.bubbleFraction(), formulaBubbleFraction(p, m, v), 1e-12)
        << "p=" << p << " m=" << m << " v=" << v;
  }
}

TEST(PipelineScheduleTest, ZeroBubbleH1HalvesOneFOneBsBubble) {
  for (auto [p, m] :
       {std::pair<int64_t, int64_t>{2, 4}, {4, 4}, {4, 8}, {4, 12}, {8, 16}}) {
    Schedule zb = generated(ScheduleKind::ZeroBubbleH1, p, m);
    SimulationResult r = simulate(zb);
    ASSERT_TRUE(r.errors.empty()) << messages(r)[0];
    SimulationResult plain = simulate(generated(ScheduleKind::OneFOneB, p, m));
    EXPECT_LE(r.bubbleFraction(), 0.5 * plain.bubbleFraction())
        << "p=" << p << " m=" << m << "\n"
        << zb.str();
    // Uniform costs (F 1, B 1, W 1): 3m + p - 1 units, the bubble
    // (p - 1)(F + B - W) of the paper.
    EXPECT_DOUBLE_EQ(r.makespan, double(3 * m + p - 1))
        << "p=" << p << " m=" << m;
    // At most 2p - r micro-batches between a forward and its weight
    // gradient on rank r (peakActivations counts from F to W).
    for (int64_t stage = 0; stage < p; ++stage)
      EXPECT_LE(r.peakActivations[stage], std::min(m, 2 * p - stage))
          << "stage " << stage;
  }
}

TEST(PipelineScheduleTest, TextRoundTrips) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                            ScheduleKind::ZeroBubbleH1}) {
    Schedule s = generated(kind, 4, 8);
    ParseResult again = parseSchedule(s.str());
    ASSERT_TRUE(again.schedule);
    EXPECT_EQ(again.schedule->str(), s.str());
    EXPECT_EQ(again.schedule->microBatches, 8);
  }
  Schedule interleaved = generated(ScheduleKind::Interleaved, 2, 4, 2);
  ParseResult again = parseSchedule(interleaved.str(), 2);
  ASSERT_TRUE(again.schedule);
  EXPECT_EQ(again.schedule->str(), interleaved.str());
  EXPECT_TRUE(simulate(*again.schedule).errors.empty());
}

TEST(PipelineScheduleTest, ParseErrorsNameTheLineAndToken) {
  ParseResult r = parseSchedule("rank 0: 0F0 0X0\nrank 1: 1F0\n");
  ASSERT_FALSE(r.schedule);
  EXPECT_EQ(r.errors[0].str().substr(0, 28), "line 1: '0X0' is not an acti");
  r = parseSchedule("rank 0: 0F0\nrank 2: 2F0\n");
  ASSERT_FALSE(r.schedule);
  EXPECT_EQ(r.errors[0].str(),
            "the ranks must be 0, 1, ... without gaps: rank 1 is missing");
  r = parseSchedule("stage 0: 0F0\n");
  EXPECT_EQ(r.errors[0].str(),
            "line 1: expected 'rank R: ACTIONS', got 'stage 0: 0F0'");
}

TEST(PipelineScheduleTest, ConstraintsAreErrors) {
  GenerateResult g = generateSchedule(ScheduleKind::OneFOneB, 4, 2);
  EXPECT_FALSE(g.schedule);
  EXPECT_EQ(g.error, "1f1b needs at least as many micro-batches as pipeline "
                     "ranks (its warm-up fills every stage), got 2 "
                     "micro-batches for 4 ranks; use more micro-batches or "
                     "gpipe");
  g = generateSchedule(ScheduleKind::Interleaved, 4, 6, 2);
  EXPECT_FALSE(g.schedule);
  EXPECT_EQ(g.error, "interleaved needs a micro-batch count that the 4 "
                     "pipeline ranks divide (it runs micro-batches in groups "
                     "of one per rank), got 6");
  g = generateSchedule(ScheduleKind::GPipe, 2, 4, 2);
  EXPECT_EQ(g.error, "gpipe has one stage per rank: virtual stages (2) need "
                     "the interleaved schedule");
  // GPipe takes fewer micro-batches than ranks.
  EXPECT_TRUE(generateSchedule(ScheduleKind::GPipe, 4, 2).schedule);
}

TEST(PipelineScheduleTest, AMissingSendIsNamed) {
  SimulationResult r = simulate(parsed("rank 0: 0F0 0RECV_B0 0B0\n"
                                       "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0\n"));
  EXPECT_EQ(messages(r),
            std::vector<std::string>{
                "rank 1, action 0: '1RECV_F0': no rank sends it (expected "
                "'0SEND_F0' on rank 0)"});
}

TEST(PipelineScheduleTest, ABackwardBeforeItsForwardIsNamed) {
  SimulationResult r = simulate(parsed("rank 0: 0B0 0F0\n"));
  EXPECT_EQ(messages(r),
            std::vector<std::string>{
                "rank 0, action 0: '0B0': the backward of micro-batch 0 "
                "comes before its forward '0F0'"});
  r = simulate(parsed("rank 0: 0F0 0W0 0B0\n"));
  EXPECT_EQ(messages(r),
            std::vector<std::string>{
                "rank 0, action 1: '0W0': the weight gradient comes before "
                "the input gradient '0B0'"});
}

TEST(PipelineScheduleTest, ACycleBetweenTwoRanksIsNamed) {
  // Rank 0 waits for a gradient before it sends the activation that rank 1
  // waits for.
  SimulationResult r = simulate(parsed("rank 0: 0F0 0RECV_B0 0SEND_F0 0B0\n"
                                       "rank 1: 1RECV_F0 1F0 1B0 1SEND_B0\n"));
  EXPECT_EQ(messages(r),
            (std::vector<std::string>{
                "rank 0, action 1: '0RECV_B0' waits forever for '1SEND_B0' of "
                "rank 1, which itself waits at action 0 '1RECV_F0' (a cycle: "
                "reorder the sends and receives)",
                "rank 1, action 0: '1RECV_F0' waits forever for '0SEND_F0' of "
                "rank 0, which itself waits at action 1 '0RECV_B0' (a cycle: "
                "reorder the sends and receives)"}));
}

TEST(PipelineScheduleTest, CountsMustBalance) {
  SimulationResult r = simulate(parsed("rank 0: 0F0 0F1 0B0 0F1\n"));
  std::vector<std::string> m = messages(r);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], "rank 0, action 3: '0F1': runs twice (first at action 1)");
  r = simulate(parsed("rank 0: 0F0 0F1 0B0\n"));
  EXPECT_EQ(messages(r),
            std::vector<std::string>{"rank 0: stage 0 never runs '0B1'"});
  r = simulate(parsed("rank 0: 1F0\n"));
  EXPECT_EQ(messages(r), std::vector<std::string>{
                             "rank 0, action 0: '1F0': stage 1 is outside the "
                             "1 stages"});
}
