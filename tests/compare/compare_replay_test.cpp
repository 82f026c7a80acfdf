// Replay (docs/METRICS.md, "Replay"): compare keeps an origin only when the
// op under test does not reproduce its own output on its recorded inputs,
// check finds a wrong kernel in one recording alone. Real training runs of
// tests/scripts/benign_train.py: pairs that differ only by rounding (thread
// count, float64 against float32, another summation order, SGD) must end
// without an origin and exit 0; one wrong kernel of the test accelerator
// (forward, backward, in place, optimizer only) must be named.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

std::string run(const std::string& name, const std::string& level, std::map<std::string, std::string> env = {}) {
  return benignRun(name, level, std::move(env));
}

std::map<std::string, std::string> wrong(const std::string& op) {
  return {{"DEVICE", "testdev"}, {"TESTDEV_WRONG_OP", op}};
}

// A comparison that must end without an origin: exit 0, ending "drift" or
// "match".
void expectBenign(const std::string& dir0, const std::string& dir1) {
  TempDir out;
  Analysis a = analyze({"compare", dir0, dir1}, out.path());
  EXPECT_EQ(a.run.exit_code, 0) << a.run.out << a.run.err;
  ASSERT_TRUE(a.summary.is_object()) << a.run.err;
  EXPECT_EQ(a.summary["counts"]["origins"], 0) << a.run.out;
  EXPECT_NE(a.summary["ending"], "divergence") << a.run.out;
  EXPECT_FALSE(a.summary["divergence"].get<bool>());
}

TEST(Replay, ThreadCountsAreBenignAndAdamAmplifies) {
  for (const char* level : {"1", "2"}) {
    SCOPED_TRACE(std::string("level ") + level);
    const std::string one = run("threads1", level), two = run("threads2", level, {{"THREADS", "2"}});
    expectBenign(one, two);
  }
  // At level 2 the Adam update that turns the rounding noise of a gradient
  // into lr-sized steps is a candidate by the ratio rule, and replay shows it
  // amplifies: both sides reproduce their own outputs.
  TempDir out;
  Analysis a = analyze({"compare", run("threads1", "2"), run("threads2", "2", {{"THREADS", "2"}})}, out.path());
  ASSERT_GE(a.summary["amplifiers"].size(), 1u) << a.run.out;
  const nlohmann::json& amp = a.summary["amplifiers"][0];
  EXPECT_EQ(amp["op"], "aten::addcdiv_");
  EXPECT_EQ(amp["replay"]["verdict"], "amplifies");
  EXPECT_GT(amp["output_error"].get<double>(), 1e-4);  // it fails...
  EXPECT_LT(amp["replay"]["error_dir1"].get<double>(), 1e-6);  // ...yet reproduces its own output
  EXPECT_LT(amp["replay"]["error_dir0"].get<double>(), 1e-6);
  EXPECT_NE(a.run.out.find("amplifies its inputs' error"), std::string::npos) << a.run.out;
  // Without replay the same candidate is an origin: what replay fixes.
  TempDir plain;
  Analysis b = analyze({"compare", run("threads1", "2"), run("threads2", "2", {{"THREADS", "2"}}), "--no-replay"},
                       plain.path());
  EXPECT_EQ(b.run.exit_code, 1) << b.run.out;
  EXPECT_EQ(b.summary["first_divergence"]["op"], "aten::addcdiv_");
}

TEST(Replay, Float64ReferenceIsBenign) {
  for (const char* level : {"1", "2"}) {
    SCOPED_TRACE(std::string("level ") + level);
    expectBenign(run("float64", level, {{"DTYPE", "float64"}}), run("threads1", level));
  }
}

TEST(Replay, SgdAndSummationOrderAreBenign) {
  for (const char* level : {"1", "2"}) {
    SCOPED_TRACE(std::string("level ") + level);
    expectBenign(run("sgd1", level, {{"OPTIM", "sgd"}}), run("sgd2", level, {{"OPTIM", "sgd"}, {"THREADS", "2"}}));
    expectBenign(run("threads1", level),
                 run("sum_order", level, {{"DEVICE", "testdev"}, {"TESTDEV_SUM_ORDER", "reverse"}}));
  }
}

// Each wrong kernel is compare's first origin, confirmed by replay, and the
// first deviating op of check on the faulty recording alone.
TEST(Replay, WrongKernelsAreNamedByCompareAndCheck) {
  const std::string reference = run("threads1", "2");
  const std::pair<const char*, const char*> cases[] = {
      {"gelu", "aten::gelu.*fwd"}, {"gelu_backward", "aten::gelu.*bwd"}, {"tanh_", "aten::tanh_.*fwd"},
      {"addcdiv_", "aten::addcdiv_.*fwd"}};
  for (const auto& [op, name] : cases) {
    SCOPED_TRACE(op);
    const std::string faulty = run(std::string("wrong_") + op, "2", wrong(op));
    TempDir out;
    Analysis c = analyze({"compare", reference, faulty}, out.path());
    EXPECT_EQ(c.run.exit_code, 1) << c.run.out << c.run.err;
    ASSERT_TRUE(c.summary["first_divergence"].is_object()) << c.run.out;
    const nlohmann::json& first = c.summary["first_divergence"];
    EXPECT_TRUE(first["origin"].get<bool>()) << c.run.out;
    EXPECT_EQ(first["step"], 0);
    EXPECT_TRUE(std::regex_match(first["name"].get<std::string>(), std::regex(name))) << first["name"];
    EXPECT_EQ(first["replay"]["verdict"], "confirmed") << c.run.out;
    EXPECT_NEAR(first["replay"]["error_dir1"].get<double>(), 1e-3, 2e-4);  // TESTDEV_WRONG_SCALE's 1e-3

    TempDir checked;
    Analysis k = analyze({"check", faulty}, checked.path());
    EXPECT_EQ(k.run.exit_code, 1) << k.run.out << k.run.err;
    ASSERT_TRUE(k.summary["first_divergence"].is_object()) << k.run.out;
    EXPECT_EQ(k.summary["first_divergence"]["name"], first["name"]) << k.run.out;
    EXPECT_EQ(k.summary["first_divergence"]["replay"]["verdict"], "confirmed");
    EXPECT_NE(k.run.out.find("WRONG KERNEL"), std::string::npos) << k.run.out;
  }
}

TEST(Replay, CheckPassesRightKernelsAndSaysWhatItCannotReplay) {
  for (const std::string& dir : {run("threads1", "2"), run("sum_order", "2", {{"DEVICE", "testdev"},
                                                                              {"TESTDEV_SUM_ORDER", "reverse"}})}) {
    TempDir out;
    Analysis k = analyze({"check", dir}, out.path());
    EXPECT_EQ(k.run.exit_code, 0) << k.run.out << k.run.err;
    EXPECT_EQ(k.summary["format"], "acc-check-summary");
    EXPECT_EQ(k.summary["counts"]["origins"], 0);
    EXPECT_TRUE(k.summary["first_divergence"].is_null());
    // Every op runs again except those replay cannot: each reason counted.
    ASSERT_TRUE(k.summary["not_replayable"].is_object());
    EXPECT_TRUE(k.summary["not_replayable"].contains("draws random numbers")) << k.summary["not_replayable"];
    const std::string csv = readFile(out.path() + "/report.csv");
    EXPECT_NE(csv.find(",reproduced,"), std::string::npos);
    EXPECT_NE(k.run.out.find("no wrong kernel"), std::string::npos) << k.run.out;
    // Rows come back from check's spill in execution order (the first
    // column, the record index), and the spill is gone.
    std::istringstream lines(csv);
    std::string line;
    std::getline(lines, line);  // header
    uint64_t last = 0, rows = 0;
    while (std::getline(lines, line)) {
      const uint64_t index = std::stoull(line.substr(0, line.find(',')));
      EXPECT_GE(index, last) << line;
      last = index;
      ++rows;
    }
    const nlohmann::json& pairs = k.summary["counts"]["tensor_pairs"];
    EXPECT_EQ(rows, pairs["compared"].get<uint64_t>() + pairs["not_compared"].get<uint64_t>());
    for (const auto& entry : std::filesystem::directory_iterator(out.path())) {
      EXPECT_EQ(entry.path().filename().string().rfind("acc-compare-rows", 0), std::string::npos) << entry.path();
    }
  }
  // cross_entropy's backward is two autograd nodes (nll_loss's, then
  // log_softmax's): the first has the shape of the op's input gradient but
  // not its value, and must not be judged as if it were.
  TempDir ce;
  Analysis k = analyze({"check", run("cross_entropy", "2", {{"LOSS", "cross_entropy"}})}, ce.path());
  EXPECT_EQ(k.run.exit_code, 0) << k.run.out << k.run.err;
  EXPECT_TRUE(k.summary["not_replayable"].contains("one of 2 autograd nodes of a composite op (NllLossBackward0)"))
      << k.summary["not_replayable"];
  TempDir out;
  Analysis level1 = analyze({"check", run("threads1", "1")}, out.path());
  EXPECT_EQ(level1.run.exit_code, 0) << level1.run.out;
  EXPECT_NE(level1.run.out.find("ACC_LEVEL=2"), std::string::npos) << level1.run.out;
}

// What the replay workers print (torch's own warnings) is collected in
// summary.json, never printed: check's output is its verdict.
TEST(Replay, WorkersStderrGoesToTheSummaryNotTheTerminal) {
  TempDir dir, out;
  RunResult plain = runPythonPlain(testScript("uint8_mask.py"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // Torch versions that no longer warn leave nothing to collect.
  const bool warns = plain.err.find("uint8 is now deprecated") != std::string::npos;
  RunResult rec = recordPython(testScript("uint8_mask.py"), dir.path(), {{"ACC_LEVEL", "2"}});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  Analysis k = analyze({"check", dir.path()}, out.path());
  EXPECT_EQ(k.run.exit_code, 0) << k.run.out << k.run.err;
  EXPECT_EQ(k.run.err.find("deprecated"), std::string::npos) << k.run.err;
  EXPECT_EQ(k.run.out.find("deprecated"), std::string::npos) << k.run.out;
  ASSERT_TRUE(k.summary.contains("replay_stderr")) << k.summary.dump();
  const nlohmann::json& collected = k.summary["replay_stderr"];
  if (warns) {
    EXPECT_GE(collected["lines"].get<uint64_t>(), 1u) << collected;
    EXPECT_NE(collected["first_lines"].dump().find("uint8 is now deprecated"), std::string::npos) << collected;
  }
  EXPECT_LE(collected["first_lines"].size(), 20u);
}

// Level 1 names a wrong kernel whose inputs agree bit for bit, gives the
// command that re-records its region at level 2, and that recording lets
// replay confirm it.
TEST(Replay, Level1CandidateComesWithTheCommandThatConfirmsIt) {
  const std::string reference = run("threads1", "1"), faulty = run("wrong_gelu", "1", wrong("gelu"));
  TempDir out;
  Analysis a = analyze({"compare", reference, faulty}, out.path());
  EXPECT_EQ(a.run.exit_code, 1) << a.run.out;
  const nlohmann::json& first = a.summary["first_divergence"];
  ASSERT_TRUE(first.is_object());
  EXPECT_TRUE(first["origin"].get<bool>());
  EXPECT_EQ(first["op"], "aten::gelu");
  ASSERT_TRUE(first.contains("rerecord")) << first;
  const std::string rerecord = first["rerecord"];
  EXPECT_NE(a.run.out.find(rerecord), std::string::npos) << a.run.out;
  // ACC_LEVEL=2 ACC_STEPS=0 ACC_OP_RANGE=start,end: record both runs so.
  std::map<std::string, std::string> env;
  std::istringstream words(rerecord);
  for (std::string w; words >> w;) env[w.substr(0, w.find('='))] = w.substr(w.find('=') + 1);
  ASSERT_EQ(env["ACC_LEVEL"], "2");
  ASSERT_EQ(env["ACC_STEPS"], "0");
  std::map<std::string, std::string> env_faulty = env;
  for (const auto& [k, v] : wrong("gelu")) env_faulty[k] = v;
  const std::string again0 = run("region_reference", "2", env), again1 = run("region_wrong_gelu", "2", env_faulty);
  EXPECT_LT(readRank(again1 + "/rank0").records.size(), 12u);  // just the region
  TempDir confirmed;
  Analysis b = analyze({"compare", again0, again1}, confirmed.path());
  EXPECT_EQ(b.run.exit_code, 1) << b.run.out;
  EXPECT_EQ(b.summary["first_divergence"]["name"], first["name"]);
  EXPECT_EQ(b.summary["first_divergence"]["replay"]["verdict"], "confirmed") << b.run.out;
}

}  // namespace
}  // namespace acc::test
