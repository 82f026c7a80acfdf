// A misconfigured recorder must say exactly what is wrong, once, and leave
// the program alone: same output, exit code 0, nothing recorded.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "env/config.h"
#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

struct BadValue {
  const char* variable;
  const char* value;
};

const BadValue kBadValues[] = {
    {"ACC_ENABLE", "maybe"},        {"ACC_OUTPUT_DIR", ""},
    {"ACC_LEVEL", "3"},             {"ACC_INPUTS", "2"},
    {"ACC_OUTPUTS", "yes please"},  {"ACC_PASSES", "forward"},
    {"ACC_OP_RANGE", "conv,relu"},  {"ACC_OP_LIST", "relu,,conv"},
    {"ACC_MODULES", "enc..norm"},
    {"ACC_SKIP", "-1"},             {"ACC_STEPS", "5-3"},
    {"ACC_RANKS", "zero"},          {"ACC_STACK", "java"},
    {"ACC_NESTED", "deep"},         {"ACC_DEDUP", "sometimes"},     {"ACC_BUFFER_MB", "0"}, {"ACC_DEVICE_BATCH", "0"}, {"ACC_RECORD_BATCH", "65"},
    {"ACC_ZSTD_LEVEL", "99"},       {"ACC_DATA_ZSTD_LEVEL", "0"},
    {"ACC_FRAME_KB", "1"},          {"ACC_DATA_THREADS", "0"},      {"ACC_ON_FULL", "crash"},
    {"ACC_QUIET", "loud"},          {"ACC_EAGER", "lazy"},
    {"ACC_GRADS", "all"},           {"ACC_WATCH", "nan"},
    {"ACC_WATCH_CONTEXT", "-1"},    {"ACC_WATCH_ABORT", "later"},
    {"ACC_RANDOM", "/nonexistent/acc-reference"},
    {"ACC_OVERRIDE", "gelu@x"},
    {"ACC_REFERENCE", "/nonexistent/acc-reference"},
    {"ACC_REFERENCE_CONTEXT", "-1"}, {"ACC_REFERENCE_MAX", "0"},
    {"ACC_REFERENCE_THRESHOLDS", ""},
};

TEST(ConfigErrors, EveryVariableHasABadValueAbove) {
  for (const env::Variable& v : env::variables()) {
    EXPECT_TRUE(std::any_of(std::begin(kBadValues), std::end(kBadValues),
                            [&](const BadValue& b) { return std::string(b.variable) == v.name; }))
        << v.name << " is not run with an invalid value";
  }
}

void PrintTo(const BadValue& bad, std::ostream* os) { *os << bad.variable << "=\"" << bad.value << "\""; }

class InvalidValue : public ::testing::TestWithParam<BadValue> {};

const std::string& plainOutput() {
  static const std::string out = runPythonPlain(example("mlp_train.py"), {{"MLP_STEPS", "1"}}).out;
  return out;
}

TEST_P(InvalidValue, NamesVariableValueAndAllowedThenRunsUnrecorded) {
  const BadValue bad = GetParam();
  TempDir dir;
  RunResult r = recordPython(example("mlp_train.py"), dir.path(),
                             {{bad.variable, bad.value}, {"MLP_STEPS", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plainOutput());
  const std::string expected =
      std::string("acc: ") + bad.variable + "=\"" + bad.value + "\" is invalid; allowed: ";
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("acc: recording is off for this run\n"), std::string::npos) << r.err;
  // One line for the value, one for the consequence.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  EXPECT_FALSE(exists(dir / "rank0"));
}

INSTANTIATE_TEST_SUITE_P(EveryVariable, InvalidValue, ::testing::ValuesIn(kBadValues),
                         [](const auto& info) { return std::string(info.param.variable); });

// ACC_WATCH refuses settings that contradict it, and its own settings
// without it, each in one line naming the setting.
TEST(ConfigErrors, WatchConflictsAreNamedAndTheProgramRunsUnrecorded) {
  const std::map<std::string, std::string> cases[] = {
      {{"ACC_WATCH", "naninf"}, {"ACC_GRADS", "1"}},
      {{"ACC_WATCH", "naninf"}, {"ACC_OUTPUTS", "0"}},
      {{"ACC_WATCH_ABORT", "1"}},
  };
  const char* expected[] = {"acc: ACC_GRADS=1 cannot be combined with ACC_WATCH=naninf (",
                            "acc: ACC_OUTPUTS=0 cannot be combined with ACC_WATCH=naninf (",
                            "acc: ACC_WATCH_ABORT is set but ACC_WATCH is not naninf; allowed: "};
  for (size_t i = 0; i < std::size(cases); ++i) {
    std::map<std::string, std::string> env = cases[i];
    env["MLP_STEPS"] = "1";
    TempDir dir;
    RunResult r = recordPython(example("mlp_train.py"), dir.path(), env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plainOutput());
    EXPECT_NE(r.err.find(expected[i]), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
    EXPECT_FALSE(exists(dir / "rank0"));
  }
}

TEST(ConfigErrors, UnknownVariableIsReportedAndRecordingGoesOn) {
  TempDir dir;
  RunResult r = recordPython(example("mlp_train.py"), dir.path(), {{"ACC_LEVLE", "2"}, {"MLP_STEPS", "1"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("acc: unknown variable ACC_LEVLE ignored"), std::string::npos) << r.err;
  EXPECT_TRUE(exists(dir / "rank0/records.acc"));
}

// The scripts' and CMake's variables (README) are not the recorder's, and
// not unknown either: CI exports some to every program it runs.
TEST(ConfigErrors, TheScriptsVariablesAreIgnoredQuietly) {
  TempDir dir;
  RunResult r = recordPython(example("mlp_train.py"), dir.path(),
                             {{"ACC_DEBUG_INFO", "0"}, {"ACC_UNITY_BUILD", "1"}, {"ACC_BUILD_TARGETS", "acc"},
                              {"ACC_CMAKE_ARGS", "-DX=1"}, {"MLP_STEPS", "1"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err.find("unknown variable"), std::string::npos) << r.err;
  EXPECT_TRUE(exists(dir / "rank0/records.acc"));
}

TEST(ConfigErrors, UnwritableOutputDirIsReportedAndTheProgramRuns) {
  RunResult r = run({{python(), example("mlp_train.py")},
                     {{"ACC_OUTPUT_DIR", "/proc/acc-cannot-write-here"}, {"MLP_STEPS", "1"}},
                     "", true, ""});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, plainOutput());
  EXPECT_NE(r.err.find("acc: cannot create the output directory /proc/acc-cannot-write-here/rank0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("recording is off"), std::string::npos);
}

TEST(ConfigErrors, QuietSilencesTheStartAndEndLines) {
  TempDir dir;
  RunResult loud = recordPython(example("mlp_train.py"), dir.path(), {{"MLP_STEPS", "1"}});
  EXPECT_NE(loud.err.find("acc: recording rank 0 to"), std::string::npos) << loud.err;
  EXPECT_NE(loud.err.find("acc: rank 0: "), std::string::npos) << loud.err;
  TempDir quiet_dir;
  RunResult quiet = recordPython(example("mlp_train.py"), quiet_dir.path(), {{"ACC_QUIET", "1"}, {"MLP_STEPS", "1"}});
  EXPECT_EQ(quiet.err, "");
  EXPECT_TRUE(exists(quiet_dir / "rank0/records.acc"));
}

}  // namespace
}  // namespace acc::test
