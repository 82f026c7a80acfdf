// Tensors on memory from torch.empty & co. that nothing has written are
// recorded without values and flagged, so two runs (or two devices) do not
// "differ" on garbage; once an op writes the memory, it is recorded as usual.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <string>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

using format::Role;

const format::Tensor* tensor(const Recording& rec, const std::string& name, Role role, uint32_t position) {
  const format::OpRecord* r = rec.find(name);
  EXPECT_NE(r, nullptr) << name << " not recorded; have: " << ::testing::PrintToString(rec.names());
  if (r == nullptr) return nullptr;
  for (const format::Tensor& t : r->tensors) {
    if (t.role == role && t.position == position) return &t;
  }
  ADD_FAILURE() << name << " has no " << format::roleName(role) << "[" << position << "]";
  return nullptr;
}

void expectGarbage(const Recording& rec, const std::string& name, Role role, uint32_t position) {
  const format::Tensor* t = tensor(rec, name, role, position);
  if (t == nullptr) return;
  EXPECT_TRUE(t->uninitialized) << name;
  EXPECT_FALSE(t->has_stats) << name;
  EXPECT_FALSE(t->has_data) << name;
}

void expectValues(const Recording& rec, const std::string& name, Role role, uint32_t position) {
  const format::Tensor* t = tensor(rec, name, role, position);
  if (t == nullptr) return;
  EXPECT_FALSE(t->uninitialized) << name;
  EXPECT_TRUE(t->has_stats && t->has_data) << name;
}

TEST(UninitializedMemory, FlaggedUntilWrittenThenRecorded) {
  TempDir work;
  RunResult r = recordPython(testScript("uninitialized.py"), work / "rec", {{"ACC_LEVEL", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Recording rec = readRank(work / "rec/rank0");
  expectGarbage(rec, "aten::empty.0.fwd", Role::Output, 0);
  expectGarbage(rec, "aten::detach.1.fwd", Role::Input, 0);
  expectGarbage(rec, "aten::detach.1.fwd", Role::Output, 0);
  expectGarbage(rec, "aten::uniform_.2.fwd", Role::Input, 0);
  expectValues(rec, "aten::uniform_.2.fwd", Role::Output, 0);
  expectValues(rec, "aten::mul.3.fwd", Role::Input, 0);
  expectGarbage(rec, "aten::add.6.fwd", Role::Input, 3);  // out=, before the op wrote it
  expectValues(rec, "aten::add.6.fwd", Role::Output, 0);
  expectValues(rec, "aten::sum.7.fwd", Role::Input, 0);
  expectGarbage(rec, "aten::sum.9.fwd", Role::Input, 0);
  expectValues(rec, "aten::sum.9.fwd", Role::Output, 0);
  expectValues(rec, "aten::zeros.10.fwd", Role::Output, 0);
}

// record_function()'s handle (torch 1.13: an empty tensor made inside the
// profiler's op) is nested in that op: not a record, and not tracked, so
// the ops in the scope are not slowed by lookups for it.
TEST(UninitializedMemory, RecordFunctionHandlesAreNotOps) {
  TempDir work;
  RunResult r = recordPython(testScript("record_function_scope.py"), work / "rec", {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Recording rec = readRank(work / "rec/rank0");
  const format::OpRecord* mul = nullptr;  // the scope's op
  for (const format::OpRecord& op : rec.records) {
    EXPECT_NE(op.op, "aten::empty") << op.name;
    if (op.op == "aten::mul") mul = &op;
  }
  ASSERT_NE(mul, nullptr) << ::testing::PrintToString(rec.names());
  ASSERT_FALSE(mul->tensors.empty());
  EXPECT_TRUE(mul->tensors[0].has_stats && !mul->tensors[0].uninitialized) << mul->name;
}

TEST(UninitializedMemory, TwoRunsCompareEqualAndSayWhy) {
  TempDir work;
  for (const char* run : {"a", "b"}) {
    RunResult r = recordPython(testScript("uninitialized.py"), work / run, {{"ACC_LEVEL", "2"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  Command c;
  c.argv = {binDir() + "/acc-analyzer", "compare", work / "a", work / "b", "-o", work / "out", "--json"};
  c.preload = false;
  RunResult cmp = run(c);
  // The garbage read by sum.9 is the program's own bug; its output differs
  // between runs, and sum.9 is where it starts: inputs not judged, output off.
  nlohmann::json summary = nlohmann::json::parse(cmp.out);
  ASSERT_TRUE(summary["counts"].is_object()) << cmp.out << cmp.err;
  // report.csv: every pair on such memory says so and passes.
  std::istringstream csv(readFile(work / "out/report.csv"));
  size_t flagged = 0;
  for (std::string line; std::getline(csv, line);) {
    // (A record replay could not run for that reason says so in its replay
    // column: that is not a pair on such memory.)
    if (line.find("uninitialized memory") == std::string::npos || line.find(",not replayable:") != std::string::npos) {
      continue;
    }
    ++flagged;
    EXPECT_NE(line.find(",pass,"), std::string::npos) << line;
  }
  EXPECT_GE(flagged, 7u);
  if (cmp.exit_code == 1) {
    EXPECT_EQ(summary["first_divergence"]["name"], "aten::sum.9.fwd") << cmp.out;
  } else {
    EXPECT_EQ(cmp.exit_code, 0) << cmp.err;  // the two runs happened to get the same garbage
  }
}

}  // namespace
}  // namespace acc::test
