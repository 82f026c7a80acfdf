// Installing acc: `cmake --install` into a prefix and the Debian package
// (cpack) hold the tools, the recorder and the acc-record launcher, and the
// installed copy records and checks a training run on its own; README's
// quick start runs from the unpacked package.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/e2e/harness.h"

namespace acc::test {
namespace {

namespace fs = std::filesystem;

const std::string kBuildDir = ACC_BUILD_DIR;

TEST(Install, ThePrefixRecordsAndChecksOnItsOwn) {
  TempDir prefix, work;
  RunResult install = run({{ACC_CMAKE, "--install", kBuildDir, "--prefix", prefix.path()}, {}, "", false, ""});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  for (const char* file : {"bin/acc-analyzer", "bin/acc-replay", "bin/acc-record", "lib/acc/libacc.so",
                           "lib/acc/libacc_core.so", "lib/acc/libacc_core.torch"}) {
    EXPECT_TRUE(fs::exists(prefix / file)) << file;
  }
  // acc-record sets LD_PRELOAD itself: the harness must not.
  const std::map<std::string, std::string> env = {{"MLP_STEPS", "2"}, {"ACC_LEVEL", "2"}};
  RunResult plain = runPythonPlain(example("mlp_train.py"), env);
  RunResult r = run({{prefix / "bin/acc-record", python(), example("mlp_train.py")}, env, work.path(), false, ""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.err.find("acc: recording rank 0 to ./acc_record/rank0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("acc-record: recording in " + fs::canonical(work.path()).string() +
                       "/acc_record (read it with: acc-analyzer list ./acc_record)"),
            std::string::npos)
      << r.err;
  // The installed analyzer starts the installed replay stage.
  RunResult check = run({{prefix / "bin/acc-analyzer", "check", "acc_record", "-o", "chk"}, {}, work.path(), false, ""});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("no wrong kernel"), std::string::npos) << check.out;
  // The program's exit status passes through; no program, no recording line.
  RunResult failing = run({{prefix / "bin/acc-record", "/bin/sh", "-c", "exit 7"}, {}, work.path(), false, ""});
  EXPECT_EQ(failing.exit_code, 7);
  EXPECT_EQ(failing.err.find("acc-record: recording in"), std::string::npos) << failing.err;
  RunResult usage = run({{prefix / "bin/acc-record"}, {}, work.path(), false, ""});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("usage: acc-record PROGRAM [ARGS...]"), std::string::npos) << usage.err;
}

// The scripts build against the torch of scripts/find-python.sh's Python:
// one named by ACC_PYTHON that cannot import torch is refused by name, not
// passed over for another torch.
TEST(Install, FindPythonRefusesANamedPythonWithoutTorch) {
  const std::string script = sourceFile("scripts/find-python.sh");
  RunResult missing = run({{"/bin/bash", script}, {{"ACC_PYTHON", "/nonexistent/python3"}}, "", false, ""});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("ACC_PYTHON=/nonexistent/python3 is not an executable file"), std::string::npos)
      << missing.err;
  RunResult no_torch = run({{"/bin/bash", script}, {{"ACC_PYTHON", "/bin/false"}}, "", false, ""});
  EXPECT_EQ(no_torch.exit_code, 1);
  EXPECT_EQ(no_torch.out, "");
  EXPECT_NE(no_torch.err.find("ACC_PYTHON=/bin/false cannot import torch"), std::string::npos) << no_torch.err;
  RunResult named = run({{"/bin/bash", script}, {{"ACC_PYTHON", python()}}, "", false, ""});
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.out, python() + "\n");
}

TEST(Install, TheDebianPackageHoldsTheSameFiles) {
  TempDir out;
  RunResult pack = run({{ACC_CPACK, "-G", "DEB", "--config", kBuildDir + "/CPackConfig.cmake", "-B", out.path()},
                        {},
                        kBuildDir,
                        false,
                        ""});
  ASSERT_EQ(pack.exit_code, 0) << pack.out << pack.err;
  std::string deb;
  for (const auto& e : fs::directory_iterator(out.path())) {
    if (e.path().extension() == ".deb") deb = e.path().string();
  }
  ASSERT_FALSE(deb.empty()) << pack.out;
  RunResult contents = run({{"/usr/bin/dpkg-deb", "--contents", deb}, {}, "", false, ""});
  ASSERT_EQ(contents.exit_code, 0) << contents.err;
  for (const char* file : {"./usr/bin/acc-analyzer", "./usr/bin/acc-replay", "./usr/bin/acc-record",
                           "./usr/lib/acc/libacc.so", "./usr/lib/acc/libacc_core.so",
                           "./usr/lib/acc/libacc_core.torch"}) {
    EXPECT_NE(contents.out.find(file), std::string::npos) << file << "\n" << contents.out;
  }
  RunResult info = run({{"/usr/bin/dpkg-deb", "--field", deb, "Package"}, {}, "", false, ""});
  EXPECT_EQ(info.out, "acc\n");

  // README's quick start from the package, unpacked where dpkg would put it
  // under a root of its own: two recordings with acc-record, then compare.
  TempDir root, work;
  RunResult unpack = run({{"/usr/bin/dpkg-deb", "-x", deb, root.path()}, {}, "", false, ""});
  ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
  const fs::path usr = fs::path(root.path()) / "usr/bin";
  const std::map<std::string, std::string> ref = {{"MLP_STEPS", "2"}, {"ACC_OUTPUT_DIR", "ref"}};
  const std::map<std::string, std::string> dut = {{"MLP_STEPS", "2"}, {"ACC_OUTPUT_DIR", "dut"}};
  for (const auto& env : {ref, dut}) {
    RunResult r = run({{usr / "acc-record", python(), example("mlp_train.py")}, env, work.path(), false, ""});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("acc-record: recording in"), std::string::npos) << r.err;
  }
  RunResult compare =
      run({{usr / "acc-analyzer", "compare", "ref", "dut", "-o", "report"}, {}, work.path(), false, ""});
  EXPECT_EQ(compare.exit_code, 0) << compare.out << compare.err;
  EXPECT_NE(compare.out.find("no divergence"), std::string::npos) << compare.out;
  EXPECT_TRUE(fs::exists(fs::path(work.path()) / "report/report.html"));
}

}  // namespace
}  // namespace acc::test
