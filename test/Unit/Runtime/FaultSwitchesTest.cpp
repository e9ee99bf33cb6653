//===- FaultSwitchesTest.cpp - the one table of fault switches ------------===//
//
// The table of rtxrt/core/FaultSwitches.h: every switch named RTX_FAULT_*,
// once, in the order of its enum, documented in docs/testing.md; malformed
// values refused with the variable's name; misspelt and former names found.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/FaultSwitches.h"
#include "rtxrt/core/Tensor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

using namespace rtxrt;

namespace {

/// Sets `name` for the lifetime of the object.
struct ScopedVariable {
  ScopedVariable(const char *name, const char *value) : name(name) {
    setenv(name, value, 1);
  }
  ~ScopedVariable() { unsetenv(name); }
  const char *name;
};

/// The message `read` throws ("" if none).
template <typename Read> std::string refusal(Read read) {
  try {
    read();
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(FaultSwitchesTest, EverySwitchIsNamedOnceUnderOnePrefix) {
  std::set<std::string> names;
  for (size_t i = 0; i < faultSwitches().size(); ++i) {
    const FaultSwitchInfo &row = faultSwitches()[i];
    SCOPED_TRACE(row.name);
    EXPECT_EQ(static_cast<size_t>(row.id), i) << "rows follow the enum";
    EXPECT_EQ(std::string(row.name).rfind("RTX_FAULT_", 0), 0u);
    EXPECT_TRUE(names.insert(row.name).second) << "declared twice";
    EXPECT_NE(std::string(row.injects), "");
    EXPECT_NE(std::string(row.format), "");
    EXPECT_NE(std::string(row.readBy), "");
  }
}

TEST(FaultSwitchesTest, DocsTestingListsEverySwitch) {
  std::ifstream file(RTXRT_TEST_INPUTS "/../../../../docs/testing.md");
  ASSERT_TRUE(file) << "docs/testing.md not found";
  std::stringstream text;
  text << file.rdbuf();
  for (const FaultSwitchInfo &row : faultSwitches())
    EXPECT_NE(text.str().find(std::string("`") + row.name), std::string::npos)
        << row.name << " is not in docs/testing.md";
}

TEST(FaultSwitchesTest, MalformedValuesAreRefusedByName) {
  {
    ScopedVariable v("RTX_FAULT_SLOW_RANK", "one");
    EXPECT_EQ(refusal([] { faultRankDelay(FaultSwitch::SlowRank); }),
              "RTX_FAULT_SLOW_RANK needs RANK:MILLISECONDS, got 'one'");
  }
  {
    ScopedVariable v("RTX_FAULT_COMM_DELAY_MS", "-5");
    EXPECT_EQ(refusal([] { faultMilliseconds(FaultSwitch::CommDelayMs); }),
              "RTX_FAULT_COMM_DELAY_MS needs milliseconds in [0, 3600000], "
              "got '-5'");
  }
  {
    ScopedVariable v("RTX_FAULT_FAIL_WRITE_AFTER_BYTES", "1k");
    EXPECT_EQ(
        refusal([] { faultCount(FaultSwitch::FailWriteAfterBytes); }),
        "RTX_FAULT_FAIL_WRITE_AFTER_BYTES needs a whole number >= 0, got '1k'");
  }
  {
    ScopedVariable v("RTX_FAULT_HEAL_FLIP", "yes");
    EXPECT_EQ(refusal([] { faultFlag(FaultSwitch::HealFlip); }),
              "RTX_FAULT_HEAL_FLIP is 0 or 1, got 'yes'");
  }
}

TEST(FaultSwitchesTest, ValuesAreReadAtEachCall) {
  EXPECT_EQ(faultCount(FaultSwitch::LaunchFailForkAt), -1);
  {
    ScopedVariable v("RTX_FAULT_LAUNCH_FAIL_FORK_AT", "2");
    EXPECT_EQ(faultCount(FaultSwitch::LaunchFailForkAt), 2);
  }
  ScopedVariable v("RTX_FAULT_SLOW_RANK", "1:150");
  RankDelay slow = faultRankDelay(FaultSwitch::SlowRank);
  EXPECT_EQ(slow.rank, 1);
  EXPECT_EQ(slow.ms, 150);
}

TEST(FaultSwitchesTest, MisspeltAndFormerNamesAreFound) {
  std::string misspelt = "RTX_FAULT_SLOW_RANKS=0:150";
  std::string former = "RTXRT_CHECKPOINT_CRASH_AT=chunk:0";
  std::string declared = "RTX_FAULT_HEAL_FLIP=1";
  std::string other = "RTX_STORE=file:/tmp/s";
  char *environment[] = {misspelt.data(), former.data(), declared.data(),
                         other.data(), nullptr};
  std::vector<std::string> found = undeclaredFaultSwitches(environment);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], "RTX_FAULT_SLOW_RANKS is not a fault switch "
                      "(docs/testing.md lists them); it is ignored");
  EXPECT_EQ(found[1], "RTXRT_CHECKPOINT_CRASH_AT is now "
                      "RTX_FAULT_CHECKPOINT_CRASH_AT; the old name is ignored");
}

} // namespace
