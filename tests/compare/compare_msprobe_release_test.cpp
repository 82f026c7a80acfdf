// msprobe's released package (mindstudio-probe from PyPI, in the
// environment scripts/msprobe-env.sh makes), both ways: its own compare
// reads acc's export, with real data in the rows of initialized tensors,
// and sees a wrong kernel; acc reads the statistics and tensor dumps its
// PrecisionDebugger writes, and compare names the gelu planted wrong.
// Host suite only (.ci/run): msprobe's version, not torch's, is the subject.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {
namespace fs = std::filesystem;

// The environment's python: $MSPROBE_PYTHON (scripts/test.sh sets it), or
// made now; empty with the reason in `why` when it cannot be.
std::string msprobePython(std::string& why) {
  if (const char* set = std::getenv("MSPROBE_PYTHON"); set != nullptr && *set != '\0') return set;
  RunResult made = run({{"/bin/bash", std::string(ACC_SOURCE_DIR_FOR_TESTS) + "/scripts/msprobe-env.sh"}, {}, "", false, ""});
  if (made.exit_code != 0) {
    why = made.err;
    return "";
  }
  return made.out.substr(0, made.out.find('\n'));
}

struct Msprobe {
  std::string python, cli;
};

Msprobe msprobe() {
  std::string why;
  Msprobe m;
  m.python = msprobePython(why);
  EXPECT_FALSE(m.python.empty()) << "scripts/msprobe-env.sh failed: " << why;
  if (!m.python.empty()) m.cli = fs::path(m.python).parent_path() / "msprobe";
  return m;
}

nlohmann::json compareByMsprobe(const Msprobe& m, const std::string& target, const std::string& golden,
                                const std::string& out) {
  RunResult r = run({{m.python, testScript("msprobe_compare.py"), m.cli, target, golden, out}, {}, "", false, ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(MsprobeRelease, ItsCompareReadsAccsExportAndSeesTheWrongKernel) {
  const Msprobe m = msprobe();
  if (m.python.empty()) return;
  TempDir ref, wrong, out;
  ASSERT_EQ(analyzer({"export", recording(Variant::Reference), "--format", "msprobe", "-o", ref.path()}).exit_code, 0);
  ASSERT_EQ(analyzer({"export", recording(Variant::WrongForward), "--format", "msprobe", "-o", wrong.path()}).exit_code,
            0);
  const nlohmann::json c = compareByMsprobe(m, wrong / "step0", ref / "step0", out.path());
  ASSERT_EQ(c.value("exit", -1), 0) << c.dump();
  // Every initialized tensor (not torch.empty's output) has its data there.
  const double initialized = c["initialized_rows"].get<double>();
  EXPECT_GE(initialized, 0.5 * c["tensor_rows"].get<double>()) << c.dump();
  EXPECT_GE(c["data_rows"].get<double>(), 0.95 * initialized) << c.dump();
  // The wrong gelu's output differs, from inputs that do not.
  const nlohmann::json& rows = c["rows_by_name"];
  ASSERT_TRUE(rows.contains("Aten.gelu.0.forward.output.0")) << rows.dump();
  ASSERT_TRUE(rows.contains("Aten.gelu.0.forward.input.0")) << rows.dump();
  EXPECT_GT(rows["Aten.gelu.0.forward.output.0"]["max_rel"].get<double>(), 1e-4) << rows.dump();
  EXPECT_EQ(rows["Aten.gelu.0.forward.input.0"]["max_abs"].get<double>(), 0.0) << rows.dump();
}

TEST(MsprobeRelease, AccReadsItsDumpsAndNamesThePlantedFault) {
  const Msprobe m = msprobe();
  if (m.python.empty()) return;
  for (const char* task : {"statistics", "tensor"}) {
    SCOPED_TRACE(task);
    TempDir work;
    auto dump = [&](const char* name, const char* fault) {
      RunResult r = run({{m.python, testScript("msprobe_train.py")},
                         {{"TASK", task}, {"DUMP", work / name}, {"FAULT", fault}, {"STEPS", "2"}},
                         "",
                         false,
                         ""});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_TRUE(fs::exists(work / (std::string(name) + "/step1/rank0/dump.json"))) << r.err;
      return work / name;
    };
    const std::string ref = dump("ref", "0"), again = dump("again", "0"), wrong = dump("wrong", "1");
    // Two runs alike: no divergence.
    RunResult same = analyzer({"compare", ref, again, "-o", work / "same"});
    EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
    // The planted fault: the first origin is msprobe's Functional.gelu.
    RunResult cmp = analyzer({"compare", ref, wrong, "-o", work / "cmp", "--json"});
    EXPECT_EQ(cmp.exit_code, 1) << cmp.out << cmp.err;
    const nlohmann::json summary = nlohmann::json::parse(cmp.out, nullptr, false);
    ASSERT_TRUE(summary.is_object()) << cmp.out;
    ASSERT_TRUE(summary["first_divergence"].is_object()) << summary.dump();
    EXPECT_EQ(summary["first_divergence"]["op"], "Functional.gelu") << summary["first_divergence"].dump();
    EXPECT_EQ(summary["first_divergence"]["step"], 0) << summary["first_divergence"].dump();
    EXPECT_EQ(summary["first_divergence"]["origin"], true) << summary["first_divergence"].dump();
  }
}

}  // namespace
}  // namespace acc::test
