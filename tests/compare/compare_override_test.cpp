// ACC_OVERRIDE: a wrong kernel (tests/scripts/wrong_ops.py, a dispatch mode
// that scales an op's outputs) overridden in a real training run, forward
// and backward, on the CPU, under bf16 autocast and on the test
// accelerator (where the recorded run under a dispatch mode once failed:
// acc's own copies went through the mode; device_train.py settles the
// autograd engine's device thread before exiting, see there). Overridden,
// the run's losses follow the reference's within rounding; without the
// override they do not. compare names the wrong op in the run without it
// and finds nothing in the run with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

using Env = std::map<std::string, std::string>;

struct Runs {
  std::vector<double> reference, wrong, overridden;
  RunResult fixed;  // the overridden run
};

// The reference, the run with `wrong` ops and the same with `override_`,
// each recorded with `env` into its own directory.
Runs threeRuns(const std::string& script, Env env, const std::string& wrong, const std::string& override_,
               const TempDir& ref_dir, const TempDir& wrong_dir, const TempDir& fixed_dir) {
  Runs r;
  RunResult ref = recordPython(testScript(script), ref_dir.path(), env);
  EXPECT_EQ(ref.exit_code, 0) << ref.err;
  env["WRONG_OPS"] = wrong;
  RunResult bad = recordPython(testScript(script), wrong_dir.path(), env);
  EXPECT_EQ(bad.exit_code, 0) << bad.err;
  env["ACC_OVERRIDE"] = override_;
  r.fixed = recordPython(testScript(script), fixed_dir.path(), env);
  EXPECT_EQ(r.fixed.exit_code, 0) << r.fixed.err;
  r.reference = losses(ref);
  r.wrong = losses(bad);
  r.overridden = losses(r.fixed);
  EXPECT_FALSE(r.reference.empty()) << ref.out;
  return r;
}

// The wrong run parts from the reference; the overridden one stays within
// `rounding` of it, and ten times closer than the wrong one.
void expectFollows(const Runs& r, double rounding) {
  const double wrong = largestDifference(r.wrong, r.reference);
  const double fixed = largestDifference(r.overridden, r.reference);
  std::printf("largest loss difference: wrong %.3g, overridden %.3g\n", wrong, fixed);
  EXPECT_GT(wrong, 10 * rounding) << "the wrong kernel changes the losses";
  EXPECT_LT(fixed, rounding) << "overridden, the losses follow the reference";
  EXPECT_LT(fixed * 10, wrong);
}

void expectCalls(const std::string& dir, const std::vector<std::pair<std::string, uint64_t>>& calls) {
  const nlohmann::json m = readRank(dir + "/rank0").manifest["override"];
  ASSERT_TRUE(m.is_object()) << "the manifest says what was overridden";
  ASSERT_EQ(m["ops"].size(), calls.size()) << m.dump();
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(m["ops"][i]["op"], calls[i].first);
    EXPECT_EQ(m["ops"][i]["calls"], calls[i].second) << m.dump();
  }
  EXPECT_EQ(m["failed"], 0) << m.dump();
}

const Env kLm = {{"LM_STEPS", "3"}, {"LM_THREADS", "1"}, {"ACC_LEVEL", "1"}};

TEST(OpOverride, AWrongForwardKernelOverriddenFollowsTheReference) {
  TempDir ref, wrong, fixed, out_wrong, out_fixed;
  const Runs r = threeRuns("lm_train.py", kLm, "gelu:0.03", "aten::gelu", ref, wrong, fixed);
  expectFollows(r, 1e-5);
  // Two layers, three steps: one gelu each.
  expectCalls(fixed.path(), {{"aten::gelu", 6}});
  EXPECT_NE(r.fixed.err.find("acc: ACC_OVERRIDE: aten::gelu computed in float64 on the CPU"), std::string::npos)
      << r.fixed.err;
  EXPECT_NE(r.fixed.err.find("this run's numbers change on purpose"), std::string::npos);
  EXPECT_NE(r.fixed.err.find("aten::gelu 6 calls"), std::string::npos) << r.fixed.err;

  // compare names the wrong op without the override and nothing with it,
  // and says the run was overridden.
  Analysis bad = analyze({"compare", ref.path(), wrong.path()}, out_wrong.path());
  EXPECT_EQ(bad.run.exit_code, 1) << bad.run.out << bad.run.err;
  EXPECT_EQ(bad.summary["first_divergence"]["op"], "aten::gelu") << bad.run.out;
  Analysis good = analyze({"compare", ref.path(), fixed.path()}, out_fixed.path());
  EXPECT_EQ(good.run.exit_code, 0) << good.run.out << good.run.err;
  EXPECT_TRUE(good.summary["origins"].empty()) << good.run.out;
  EXPECT_NE(good.run.err.find("recorded with ACC_OVERRIDE: aten::gelu (6 calls)"), std::string::npos)
      << good.run.err;
  EXPECT_EQ(bad.run.err.find("ACC_OVERRIDE"), std::string::npos) << bad.run.err;
}

TEST(OpOverride, AWrongBackwardKernelOverriddenFollowsTheReference) {
  TempDir ref, wrong, fixed;
  Env env = kLm;
  env["ACC_LEVEL"] = "0";
  const Runs r = threeRuns("lm_train.py", env, "gelu_backward:0.3", "aten::gelu_backward", ref, wrong, fixed);
  expectFollows(r, 1e-5);
  expectCalls(fixed.path(), {{"aten::gelu_backward", 6}});
}

TEST(OpOverride, UnderBf16Autocast) {
  TempDir ref, wrong, fixed;
  Env env = kLm;
  env["ACC_LEVEL"] = "0";
  env["LM_AUTOCAST"] = "bf16";
  // bf16 results rounded from float64 may differ from the CPU's bf16
  // kernel by an ulp (2^-8) here and there: 2.3e-4 on a loss of 5.35 seen
  // on torch 2.6, so the bound is 1e-3 and the wrong kernel is made wrong
  // enough to move the loss by ten times that.
  const Runs r = threeRuns("lm_train.py", env, "gelu:0.3,gelu_backward:0.3", "aten::gelu,aten::gelu_backward",
                           ref, wrong, fixed);
  expectFollows(r, 1e-3);
  expectCalls(fixed.path(), {{"aten::gelu", 6}, {"aten::gelu_backward", 6}});
}

TEST(OpOverride, OnTheTestAccelerator) {
  TempDir ref, wrong, fixed;
  const Env env = {{"DEVICE", "testdev"}, {"TESTDEV_LIB", ACC_TESTDEV_LIB}, {"STEPS", "3"}, {"ACC_LEVEL", "1"}};
  const Runs r = threeRuns("device_train.py", env, "gelu:0.03,gelu_backward:0.03", "aten::gelu,aten::gelu_backward",
                           ref, wrong, fixed);
  expectFollows(r, 1e-6);
  // Two GELU layers, three steps.
  expectCalls(fixed.path(), {{"aten::gelu", 6}, {"aten::gelu_backward", 6}});
  // The run was on the device (privateuseone, or its name on torch 2).
  const nlohmann::json devices = readRank(fixed / "rank0").manifest["devices"];
  EXPECT_TRUE(std::any_of(devices.begin(), devices.end(), [](const nlohmann::json& d) { return d != "cpu"; }))
      << devices.dump();
}

TEST(OpOverride, StepsAndRandomOps) {
  TempDir dir;
  Env env = kLm;
  env["ACC_LEVEL"] = "0";
  // From step 1 on; the encoder's dropout (p = 0) draws: refused, said once.
  env["ACC_OVERRIDE"] = "aten::gelu@1-,aten::dropout";
  RunResult r = recordPython(testScript("lm_train.py"), dir.path(), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expectCalls(dir.path(), {{"aten::gelu@1-", 4}, {"aten::dropout", 0}});
  EXPECT_EQ(readRank(dir / "rank0").manifest["override"]["ops"][1]["refused"], true);
  const std::string refused = "acc: ACC_OVERRIDE: aten::dropout draws random numbers; it is not overridden";
  const size_t first = r.err.find(refused);
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(refused, first + 1), std::string::npos) << "said once";
  // Nothing overridden: the losses are the program's own.
  env["ACC_OVERRIDE"] = "aten::dropout";
  TempDir again;
  RunResult plain = runPythonPlain(testScript("lm_train.py"), {{"LM_STEPS", "3"}, {"LM_THREADS", "1"}});
  RunResult untouched = recordPython(testScript("lm_train.py"), again.path(), env);
  EXPECT_EQ(lossLines(untouched.out), lossLines(plain.out));
}

// A C++ program linked with libtorch: no Python, the same override (the
// linear layers' addmm forward, ReLU's backward). Its losses stay within
// float32 rounding of its own.
TEST(OpOverride, InACppProgram) {
  const std::string program = binDir() + "/acc-example-cpp-train";
  TempDir dir;
  RunResult plain = run({{program}, {}, "", false, ""});
  RunResult r = run({{program},
                     {{"ACC_OUTPUT_DIR", dir.path()}, {"ACC_OVERRIDE", "aten::addmm,aten::threshold_backward"}},
                     "",
                     true,
                     ""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two linear layers and one ReLU, three steps.
  expectCalls(dir.path(), {{"aten::addmm", 6}, {"aten::threshold_backward", 3}});
  const std::vector<double> own = losses(plain), overridden = losses(r);
  ASSERT_EQ(own.size(), 3u) << plain.out;
  EXPECT_LT(largestDifference(own, overridden), 1e-6);
}

TEST(OpOverride, ABadValueIsRefusedWithWhatIsAllowed) {
  for (const char* value : {"aten::", "gelu@x", "gelu@3-1", "gelu@1-5:2", "aten::ge lu", ","}) {
    TempDir dir;
    RunResult r = recordPython(testScript("lm_train.py"), dir.path(), {{"LM_STEPS", "1"}, {"ACC_OVERRIDE", value}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(std::string("acc: ACC_OVERRIDE=\"") + value + "\" is invalid; allowed: comma-separated ops"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("acc: recording is off for this run"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace acc::test
