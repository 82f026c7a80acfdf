// Each selection variable against a full recording of the same program:
// filters choose records, they never rename them.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cctype>
#include <set>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

using format::Pass;

struct Run {
  TempDir dir;
  RunResult result;
  Recording rec;
};

std::unique_ptr<Run> record(std::map<std::string, std::string> env, const std::string& rank_dir = "rank0") {
  auto run = std::make_unique<Run>();
  run->result = recordPython(example("mlp_train.py"), run->dir.path(), std::move(env));
  if (exists(run->dir / (rank_dir + "/records.acc"))) run->rec = readRank(run->dir / rank_dir);
  return run;
}

const Recording& full() {
  static auto run = record({});
  return run->rec;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST(Filters, PassesSelectForwardOrBackward) {
  auto fwd = record({{"ACC_PASSES", "fwd"}});
  auto bwd = record({{"ACC_PASSES", "bwd"}});
  size_t full_fwd = 0, full_bwd = 0;
  for (const auto& r : full().records) (r.pass == Pass::Forward ? full_fwd : full_bwd)++;
  ASSERT_GT(full_bwd, 0u);
  EXPECT_EQ(fwd->rec.records.size(), full_fwd);
  EXPECT_EQ(bwd->rec.records.size(), full_bwd);
  for (const auto& r : fwd->rec.records) EXPECT_EQ(r.pass, Pass::Forward);
  for (const auto& r : bwd->rec.records) EXPECT_EQ(r.pass, Pass::Backward);
  // Backward-only still names backward records after their forward op.
  std::string relu = full().named("aten::relu.").at(0)->name;
  EXPECT_NE(bwd->rec.find(relu.replace(relu.size() - 3, 3, "bwd")), nullptr);
}

TEST(Filters, OpListMatchesSubstringsCaseInsensitively) {
  auto relu = record({{"ACC_OP_LIST", "ReLU"}});
  ASSERT_FALSE(relu->rec.records.empty());
  for (const auto& r : relu->rec.records) {
    EXPECT_NE(lower(r.op + r.grad_fn).find("relu"), std::string::npos) << r.name;
  }
  size_t expected = 0;
  for (const auto& r : full().records) expected += lower(r.op + r.grad_fn).find("relu") != std::string::npos;
  EXPECT_EQ(relu->rec.records.size(), expected);
  bool saw_bwd = false;
  for (const auto& r : relu->rec.records) saw_bwd |= r.pass == Pass::Backward;
  EXPECT_TRUE(saw_bwd);

  auto two = record({{"ACC_OP_LIST", "relu,mse"}});
  size_t expected_two = 0;
  for (const auto& r : full().records) {
    std::string s = lower(r.op + r.grad_fn);
    expected_two += s.find("relu") != std::string::npos || s.find("mse") != std::string::npos;
  }
  EXPECT_EQ(two->rec.records.size(), expected_two);
}

// Names of the full recording inside [start, end) in each step; an empty
// start opens the range at each step's beginning.
std::vector<std::string> expectedRange(const std::string& start, const std::string& end) {
  std::vector<std::string> expected;
  const int64_t last_step = full().records.back().step;
  for (int64_t step = 0; step <= last_step; ++step) {
    bool in = start.empty();
    for (const auto& r : full().records) {
      if (r.step != step) continue;
      if (r.name == start) in = true;
      if (r.name == end) in = false;
      if (in) expected.push_back(r.name);
    }
  }
  return expected;
}

TEST(Filters, OpRangeIsHalfOpenByNameInEveryStep) {
  const format::OpRecord* linear = nullptr;
  const format::OpRecord* loss = nullptr;
  for (const auto& r : full().records) {
    if (r.step == 1 && r.op == "aten::linear" && linear == nullptr) linear = &r;
    if (r.step == 1 && r.op == "aten::mse_loss" && r.pass == Pass::Forward) loss = &r;
  }
  ASSERT_NE(linear, nullptr);
  ASSERT_NE(loss, nullptr);
  for (const auto& [start, end] : std::vector<std::pair<std::string, std::string>>{
           {linear->name, loss->name}, {loss->name, ""}, {"", linear->name}}) {
    auto ranged = record({{"ACC_OP_RANGE", start + "," + end}});
    ASSERT_EQ(ranged->result.exit_code, 0) << ranged->result.err;
    auto expected = expectedRange(start, end);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(ranged->rec.names(), expected) << start << "," << end;
  }
  // A backward name may bound the range too.
  const std::string relu_bwd = full().named("aten::relu.").at(0)->name;
  std::string bwd = relu_bwd.substr(0, relu_bwd.size() - 3) + "bwd";
  ASSERT_NE(full().find(bwd), nullptr);
  auto from_bwd = record({{"ACC_OP_RANGE", bwd + ","}});
  EXPECT_EQ(from_bwd->rec.names(), expectedRange(bwd, ""));
}

TEST(Filters, SkipRecordsOneThenSkipsN) {
  auto skipped = record({{"ACC_SKIP", "2"}});
  std::vector<std::string> expected;
  for (size_t i = 0; i < full().records.size(); i += 3) expected.push_back(full().records[i].name);
  EXPECT_EQ(skipped->rec.names(), expected);
  const auto& c = skipped->rec.manifest["counts"];
  EXPECT_EQ(c["skipped"].get<uint64_t>(), full().records.size() - expected.size());
}

TEST(Filters, StepsSelectTrainingSteps) {
  auto one = record({{"ACC_STEPS", "1"}});
  ASSERT_FALSE(one->rec.records.empty());
  for (const auto& r : one->rec.records) EXPECT_EQ(r.step, 1) << r.name;
  size_t expected = 0;
  for (const auto& r : full().records) expected += r.step == 1;
  EXPECT_EQ(one->rec.records.size(), expected);

  auto some = record({{"ACC_STEPS", "0,2-3"}});
  std::set<int64_t> steps;
  for (const auto& r : some->rec.records) steps.insert(r.step);
  EXPECT_EQ(steps, (std::set<int64_t>{0, 2, 3}));

  // Strides and open ranges: a long run sampled. The records of a sampled
  // step are those of the full run's step, names included.
  auto strided = record({{"ACC_STEPS", "1-:2"}});
  std::set<int64_t> sampled;
  std::vector<std::string> names, full_names;
  for (const auto& r : strided->rec.records) {
    sampled.insert(r.step);
    if (r.step == 1) names.push_back(r.name);
  }
  for (const auto& r : full().records) {
    if (r.step == 1) full_names.push_back(r.name);
  }
  std::set<int64_t> odd;
  for (const auto& r : full().records) {
    if (r.step % 2 == 1) odd.insert(r.step);
  }
  EXPECT_EQ(sampled, odd);
  EXPECT_EQ(names, full_names);
}

TEST(Filters, RanksRecordOnlyTheListedRanks) {
  auto skipped_rank = record({{"ACC_RANKS", "1"}, {"RANK", "0"}});
  EXPECT_EQ(skipped_rank->result.exit_code, 0);
  EXPECT_FALSE(exists(skipped_rank->dir / "rank0"));
  auto rank2 = record({{"ACC_RANKS", "0,2"}, {"RANK", "2"}}, "rank2");
  ASSERT_EQ(rank2->result.exit_code, 0) << rank2->result.err;
  EXPECT_FALSE(rank2->rec.records.empty());
  EXPECT_EQ(rank2->rec.manifest["rank"], 2);
  auto unset = record({{"RANK", "3"}}, "rank3");
  EXPECT_FALSE(unset->rec.records.empty()) << "no ACC_RANKS records every rank";
}

TEST(Filters, InputsAndOutputsCanBeLeftOut) {
  auto no_inputs = record({{"ACC_INPUTS", "0"}});
  auto no_outputs = record({{"ACC_OUTPUTS", "0"}});
  ASSERT_EQ(no_inputs->rec.records.size(), full().records.size());
  for (const auto& r : no_inputs->rec.records) {
    EXPECT_TRUE(r.scalars.empty()) << r.name;
    for (const auto& t : r.tensors) {
      // Gradients of an op's inputs are inputs' data too.
      EXPECT_TRUE(t.role == format::Role::Output || t.role == format::Role::GradIn) << r.name;
    }
  }
  bool saw_output = false;
  for (const auto& r : no_outputs->rec.records) {
    for (const auto& t : r.tensors) {
      EXPECT_TRUE(t.role == format::Role::Input || t.role == format::Role::GradOut) << r.name;
      saw_output |= t.role == format::Role::Output;
    }
  }
  EXPECT_FALSE(saw_output);
}

TEST(Filters, OutputDirDefaultsToAccRecordInTheWorkingDirectory) {
  TempDir cwd;
  RunResult r = run({{python(), example("mlp_train.py")}, {}, cwd.path(), true, ""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(exists(cwd / "acc_record/rank0/records.acc"));
  EXPECT_TRUE(exists(cwd / "acc_record/rank0/manifest.json"));
}

TEST(Filters, EnableZeroRecordsNothing) {
  auto off = record({{"ACC_ENABLE", "0"}});
  EXPECT_EQ(off->result.exit_code, 0);
  EXPECT_FALSE(exists(off->dir / "rank0"));
  EXPECT_EQ(off->result.err, "");
}

}  // namespace
}  // namespace acc::test
