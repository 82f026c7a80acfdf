// recorder::Selector: which offered ops become records under ACC_SKIP,
// ACC_OP_LIST, ACC_OP_RANGE, ACC_STEPS and ACC_PASSES.
#include "recorder/observe/selector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace acc::recorder {
namespace {

struct Op {
  std::string name;
  std::string op;
  std::string alias = "";
  bool backward = false;
};

// Offers `ops` in order at `step`; returns the names selected.
std::vector<std::string> run(Selector& s, const std::vector<Op>& ops, int64_t step = 0) {
  std::vector<std::string> selected;
  for (const Op& o : ops) {
    if (s.select(o.name, o.op, o.alias, o.backward, step)) selected.push_back(o.name);
  }
  return selected;
}

// Forward ops named like the recorder names them: {op}.{n}.fwd.
std::vector<Op> forwardOps(const std::vector<std::string>& ops) {
  std::vector<Op> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    out.push_back({ops[i] + "." + std::to_string(i) + ".fwd", ops[i]});
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(SelectorTest, DefaultSelectsEverything) {
  Selector s(env::Config{});
  auto ops = forwardOps({"aten::conv2d", "aten::relu", "aten::add"});
  ops.push_back({"aten::relu.1.bwd", "ReluBackward0", "ReluBackward0", true});
  EXPECT_EQ(run(s, ops), (Names{"aten::conv2d.0.fwd", "aten::relu.1.fwd", "aten::add.2.fwd",
                                "aten::relu.1.bwd"}));
}

TEST(SelectorTest, SkipRecordsOneThenSkipsN) {
  env::Config c;
  c.skip = 2;
  Selector s(c);
  std::vector<int> selected;
  for (int i = 0; i < 10; ++i) {
    if (s.select("aten::add." + std::to_string(i) + ".fwd", "aten::add", "", false, 0)) {
      selected.push_back(i);
    }
  }
  EXPECT_EQ(selected, (std::vector<int>{0, 3, 6, 9}));
}

TEST(SelectorTest, SkipCountsOnlyCandidatesThatPassOtherFilters) {
  env::Config c;
  c.skip = 1;
  c.op_list = {"relu"};
  Selector s(c);
  auto ops = forwardOps({"aten::relu", "aten::conv2d", "aten::relu", "aten::conv2d",
                         "aten::relu", "aten::relu"});
  EXPECT_EQ(run(s, ops), (Names{"aten::relu.0.fwd", "aten::relu.4.fwd"}));
}

TEST(SelectorTest, OpListMatchesSubstringsCaseInsensitively) {
  env::Config c;
  c.op_list = {"relu", "conv"};  // env::parse lower-cases the list
  Selector s(c);
  auto ops = forwardOps({"aten::conv2d", "aten::ReLU_", "aten::add", "aten::convolution",
                         "aten::mm", "aten::threshold"});
  EXPECT_EQ(run(s, ops), (Names{"aten::conv2d.0.fwd", "aten::ReLU_.1.fwd",
                                "aten::convolution.3.fwd"}));
}

TEST(SelectorTest, OpListMatchesBackwardAlias) {
  env::Config c;
  c.op_list = {"relu"};
  Selector s(c);
  std::vector<Op> ops = {
      {"aten::relu.0.bwd", "aten::threshold_backward", "ReluBackward0", true},  // alias only
      {"aten::mm.1.bwd", "aten::mm", "MmBackward0", true},                       // neither
      {"aten::relu.2.bwd", "ReluBackward0", "", true},                           // op only
  };
  EXPECT_EQ(run(s, ops), (Names{"aten::relu.0.bwd", "aten::relu.2.bwd"}));
}

TEST(SelectorTest, RangeIsHalfOpenByName) {
  env::Config c;
  c.range_start = "aten::conv2d.1.fwd";
  c.range_end = "aten::relu.3.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::add", "aten::conv2d", "aten::bn", "aten::relu", "aten::mm"});
  EXPECT_EQ(run(s, ops, 0), (Names{"aten::conv2d.1.fwd", "aten::bn.2.fwd"}));
}

TEST(SelectorTest, RangeIsReArmedAtEachStep) {
  env::Config c;
  c.range_start = "aten::conv2d.1.fwd";
  c.range_end = "aten::relu.3.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::add", "aten::conv2d", "aten::bn", "aten::relu", "aten::mm"});
  const Names expected = {"aten::conv2d.1.fwd", "aten::bn.2.fwd"};
  EXPECT_EQ(run(s, ops, 0), expected);
  EXPECT_EQ(run(s, ops, 1), expected);
  EXPECT_EQ(run(s, ops, 2), expected);
}

TEST(SelectorTest, OpenRangeDoesNotLeakIntoTheNextStep) {
  env::Config c;
  c.range_start = "aten::conv2d.1.fwd";
  c.range_end = "aten::relu.99.fwd";  // never seen
  Selector s(c);
  auto step0 = forwardOps({"aten::add", "aten::conv2d", "aten::bn"});
  EXPECT_EQ(run(s, step0, 0), (Names{"aten::conv2d.1.fwd", "aten::bn.2.fwd"}));
  // Step 1 never offers the start name, so nothing is selected.
  auto step1 = forwardOps({"aten::add", "aten::mm", "aten::bn"});
  EXPECT_EQ(run(s, step1, 1), Names{});
}

TEST(SelectorTest, EmptyStartMeansFromTheBeginningOfEachStep) {
  env::Config c;
  c.range_end = "aten::relu.2.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::add", "aten::conv2d", "aten::relu", "aten::mm"});
  const Names expected = {"aten::add.0.fwd", "aten::conv2d.1.fwd"};
  EXPECT_EQ(run(s, ops, 0), expected);
  EXPECT_EQ(run(s, ops, 1), expected);
}

TEST(SelectorTest, EmptyEndMeansToTheEndOfTheStep) {
  env::Config c;
  c.range_start = "aten::relu.2.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::add", "aten::conv2d", "aten::relu", "aten::mm"});
  const Names expected = {"aten::relu.2.fwd", "aten::mm.3.fwd"};
  EXPECT_EQ(run(s, ops, 0), expected);
  EXPECT_EQ(run(s, ops, 1), expected);
}

TEST(SelectorTest, RangeBoundariesAreSeenEvenWhenFilteredOut) {
  env::Config c;
  c.op_list = {"relu"};
  c.range_start = "aten::conv2d.1.fwd";  // not in the op list
  c.range_end = "aten::mm.4.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::relu", "aten::conv2d", "aten::relu", "aten::add", "aten::mm",
                         "aten::relu"});
  EXPECT_EQ(run(s, ops), (Names{"aten::relu.2.fwd"}));
}

TEST(SelectorTest, RangeCanSpanForwardAndBackward) {
  env::Config c;
  c.range_start = "aten::relu.1.fwd";
  c.range_end = "aten::relu.1.bwd";
  Selector s(c);
  std::vector<Op> ops = {
      {"aten::conv2d.0.fwd", "aten::conv2d"},
      {"aten::relu.1.fwd", "aten::relu"},
      {"aten::sum.2.fwd", "aten::sum"},
      {"aten::sum.2.bwd", "SumBackward0", "SumBackward0", true},
      {"aten::relu.1.bwd", "ReluBackward0", "ReluBackward0", true},
      {"aten::conv2d.0.bwd", "ConvolutionBackward0", "ConvolutionBackward0", true},
  };
  EXPECT_EQ(run(s, ops), (Names{"aten::relu.1.fwd", "aten::sum.2.fwd", "aten::sum.2.bwd"}));
}

TEST(SelectorTest, StepsFilter) {
  env::Config c;
  c.steps.ranges = {{1, 2}, {5, 5}};
  Selector s(c);
  std::vector<int64_t> selected;
  for (int64_t step = 0; step < 8; ++step) {
    if (s.select("aten::add.0.fwd", "aten::add", "", false, step)) selected.push_back(step);
    EXPECT_EQ(s.stepSelected(step), c.steps.contains(step)) << step;
  }
  EXPECT_EQ(selected, (std::vector<int64_t>{1, 2, 5}));
}

// The observer builds an op's name before select() only when the selector
// reads names; otherwise it passes none and names the ops it records.
TEST(SelectorTest, OnlyRangesReadNames) {
  env::Config plain;
  plain.op_list = {"add"};
  plain.skip = 1;
  Selector s(plain);
  EXPECT_FALSE(s.matchesNames());
  std::vector<int> selected;
  for (int i = 0; i < 4; ++i) {
    if (s.select("", i % 2 ? "aten::add" : "aten::mul", "", false, 0)) selected.push_back(i);
  }
  EXPECT_EQ(selected, (std::vector<int>{1}));  // adds 1 and 3, one skipped after each record

  env::Config ranged;
  ranged.range_end = "aten::add.1.fwd";
  EXPECT_TRUE(Selector(ranged).matchesNames());
  env::Config started;
  started.range_start = "aten::add.1.fwd";
  EXPECT_TRUE(Selector(started).matchesNames());
}

// A range is re-armed with each step, so a step that is not recorded
// (whose boundaries are not looked at) leaves the next one unaffected.
TEST(SelectorTest, UnselectedStepDoesNotMoveTheRange) {
  env::Config c;
  c.steps.ranges = {{1, 1}};
  c.range_start = "aten::relu.1.fwd";
  Selector s(c);
  auto ops = forwardOps({"aten::conv2d", "aten::relu", "aten::add"});
  EXPECT_EQ(run(s, ops, 0), Names{});
  EXPECT_EQ(run(s, {ops[0]}, 1), Names{});  // step 1 starts outside the range
  EXPECT_EQ(run(s, {ops[1], ops[2]}, 1), (Names{"aten::relu.1.fwd", "aten::add.2.fwd"}));
}

TEST(SelectorTest, PassesFilter) {
  std::vector<Op> ops = {
      {"aten::relu.0.fwd", "aten::relu"},
      {"aten::relu.0.bwd", "ReluBackward0", "ReluBackward0", true},
  };
  env::Config fwd;
  fwd.passes = env::Passes::Forward;
  Selector sf(fwd);
  EXPECT_EQ(run(sf, ops), (Names{"aten::relu.0.fwd"}));

  env::Config bwd;
  bwd.passes = env::Passes::Backward;
  Selector sb(bwd);
  EXPECT_EQ(run(sb, ops), (Names{"aten::relu.0.bwd"}));

  env::Config both;
  Selector s2(both);
  EXPECT_EQ(run(s2, ops), (Names{"aten::relu.0.fwd", "aten::relu.0.bwd"}));
}

TEST(SelectorTest, FilteredPassesDoNotConsumeSkip) {
  env::Config c;
  c.passes = env::Passes::Backward;
  c.skip = 1;
  Selector s(c);
  std::vector<Op> ops;
  for (int i = 0; i < 4; ++i) {
    std::string n = std::to_string(i);
    ops.push_back({"aten::mm." + n + ".fwd", "aten::mm"});
    ops.push_back({"aten::mm." + n + ".bwd", "MmBackward0", "MmBackward0", true});
  }
  EXPECT_EQ(run(s, ops), (Names{"aten::mm.0.bwd", "aten::mm.2.bwd"}));
}

}  // namespace
}  // namespace acc::recorder
