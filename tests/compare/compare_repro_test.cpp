// acc-analyzer repro (analyzer/repro/): one recorded op as .npy inputs,
// op.json and repro.py, run here with the system's Python and torch. The
// script must reproduce the error the recording shows (check's figure) for
// a wrong forward and a wrong backward kernel of the test accelerator, on
// the CPU and on the device itself, and say clearly when an op cannot be
// reproduced.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

std::map<std::string, std::string> wrong(const std::string& op) {
  return {{"DEVICE", "testdev"}, {"TESTDEV_WRONG_OP", op}};
}

// The name of the first record of `op` and `pass` (op numbers differ
// between torch versions).
std::string firstRecord(const std::string& dir, const std::string& op, const std::string& pass) {
  RunResult list = analyzer({"list", dir, "--json"});
  std::istringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_object() && r["op"] == op && r["pass"] == pass) return r["name"];
  }
  ADD_FAILURE() << "no " << op << " " << pass << " record in " << dir;
  return "";
}

// The first deviating record check finds in `dir`, with its error.
std::pair<std::string, double> firstDeviation(const std::string& dir) {
  TempDir out;
  Analysis k = analyze({"check", dir}, out.path());
  EXPECT_EQ(k.run.exit_code, 1) << k.run.out << k.run.err;
  if (!k.summary["first_divergence"].is_object()) return {"", 0};
  return {k.summary["first_divergence"]["name"], k.summary["first_divergence"]["replay"]["error_dir1"]};
}

// repro.py's --json output, run with the interpreter that has torch.
nlohmann::json runRepro(const std::string& out, std::vector<std::string> args = {},
                        std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {python(), out + "/repro.py", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run({argv, env, "", false, ""});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    ADD_FAILURE() << "not JSON: " << r.out << r.err;
    return {};
  }
}

TEST(Repro, ReproducesAWrongForwardKernelOnTheCpuAndOnTheDevice) {
  const std::string faulty = benignRun("wrong_gelu", "2", wrong("gelu"));
  const auto [name, error] = firstDeviation(faulty);
  ASSERT_NE(name.find("aten::gelu"), std::string::npos) << name;
  TempDir out;
  RunResult written = analyzer({"repro", faulty, name, "-o", out.path()});
  ASSERT_EQ(written.exit_code, 0) << written.out << written.err;
  EXPECT_NE(written.out.find("python3 " + out.path() + "/repro.py"), std::string::npos) << written.out;
  for (const char* file : {"/repro.py", "/op.json", "/inputs/input0.npy", "/recorded/output0.npy"}) {
    EXPECT_TRUE(exists(out.path() + file)) << file;
  }
  const nlohmann::json op = nlohmann::json::parse(readFile(out.path() + "/op.json"));
  EXPECT_EQ(op["op"], "aten::gelu");
  EXPECT_EQ(op["overload"], "");
  EXPECT_EQ(op["arguments"]["1"]["value"], "\"none\"");  // approximate, as recorded

  // The CPU's kernel is right; the recorded output carries check's error.
  nlohmann::json cpu = runRepro(out.path());
  ASSERT_EQ(cpu["errors"].size(), 1u) << cpu;
  const nlohmann::json& e = cpu["errors"][0];
  EXPECT_EQ(e["tensor"], "output[0]");
  EXPECT_NEAR(e["recorded"].get<double>(), error, error * 0.01) << e;
  EXPECT_NEAR(e["recorded"].get<double>(), 1e-3, 2e-4);  // TESTDEV_WRONG_SCALE's 1e-3
  EXPECT_LT(e["cpu"].get<double>(), 1e-6);
  EXPECT_LT(e["device"].get<double>(), 1e-6);

  // On the faulty device itself (loaded by --setup) the script shows the bug.
  TempDir setup;
  const std::string setup_file = setup.path() + "/load_testdev.py";
  {
    std::ofstream f(setup_file);
    f << "import os, sys\nsys.path.insert(0, " << nlohmann::json(testScript("../accelerator")).dump() << ")\n"
      << "import testdev\nprint('device', testdev.load(os.environ['TESTDEV_LIB']), file=sys.stderr)\n";
  }
  const std::string device = majorMinor(readRank(faulty + "/rank0").manifest["torch_version"]) == "1.13"
                                 ? "privateuseone" : "testdev";
  nlohmann::json on_device = runRepro(out.path(), {"--setup", setup_file, "--device", device},
                                      {{"TESTDEV_LIB", ACC_TESTDEV_LIB}, {"TESTDEV_WRONG_OP", "gelu"}});
  ASSERT_EQ(on_device["errors"].size(), 1u) << on_device;
  EXPECT_NEAR(on_device["errors"][0]["device"].get<double>(), error, error * 0.01) << on_device;
  EXPECT_EQ(on_device["device"], device);

  // The plain text names the op and the three errors.
  RunResult text = run({{python(), out.path() + "/repro.py"}, {}, "", false, ""});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(name + " (aten::gelu.default), step 0, rank 0, recorded on"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("output[0] float32 [128, 256]: recorded 0.001, cpu "), std::string::npos) << text.out;
}

TEST(Repro, ReproducesAWrongBackwardKernel) {
  const std::string faulty = benignRun("wrong_gelu_backward", "2", wrong("gelu_backward"));
  const auto [name, error] = firstDeviation(faulty);
  ASSERT_NE(name.find(".bwd"), std::string::npos) << name;
  TempDir out;
  RunResult written = analyzer({"repro", faulty, name, "-o", out.path()});
  ASSERT_EQ(written.exit_code, 0) << written.out << written.err;
  EXPECT_TRUE(exists(out.path() + "/inputs/grad_in0.npy"));
  nlohmann::json r = runRepro(out.path());
  ASSERT_EQ(r["errors"].size(), 1u) << r;
  EXPECT_EQ(r["errors"][0]["tensor"], "grad_out[0]");
  EXPECT_NEAR(r["errors"][0]["recorded"].get<double>(), error, error * 0.01) << r;
  EXPECT_LT(r["errors"][0]["cpu"].get<double>(), 1e-6);
}

// Batch norm's backward (running statistics not differentiated) and an op
// with keyword-only arguments and list arguments run too.
TEST(Repro, RunsOpsWithRunningStatisticsAndKeywordArguments) {
  const std::string dir = benignRun("threads1", "2");
  for (const auto& [op, pass] : std::vector<std::pair<std::string, std::string>>{
           {"aten::batch_norm", "bwd"}, {"aten::addcdiv_", "fwd"}, {"aten::sum", "fwd"}}) {
    const std::string name = firstRecord(dir, op, pass);
    SCOPED_TRACE(name);
    TempDir out;
    RunResult written = analyzer({"repro", dir, name, "-o", out.path()});
    ASSERT_EQ(written.exit_code, 0) << written.out << written.err;
    nlohmann::json r = runRepro(out.path());
    ASSERT_GE(r["errors"].size(), 1u) << r;
    for (const nlohmann::json& e : r["errors"]) {
      EXPECT_LT(e["recorded"].get<double>(), 1e-5) << e;  // a right CPU kernel
      EXPECT_LT(e["device"].get<double>(), 1e-5) << e;
    }
  }
}

TEST(Repro, SaysWhyItCannot) {
  const std::string dir = benignRun("threads1", "2");
  TempDir out;
  RunResult missing = analyzer({"repro", dir, "aten::gelu.9999.fwd", "-o", out.path()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no record named aten::gelu.9999.fwd"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("did you mean: aten::gelu."), std::string::npos) << missing.err;
  const std::string level1_dir = benignRun("threads1", "1");
  RunResult level1 = analyzer({"repro", level1_dir, firstRecord(level1_dir, "aten::gelu", "fwd"), "-o", out.path()});
  EXPECT_EQ(level1.exit_code, 2);
  EXPECT_NE(level1.err.find("cannot be re-run: its inputs were recorded without their values"), std::string::npos)
      << level1.err;
  RunResult no_out = analyzer({"repro", dir, firstRecord(dir, "aten::gelu", "fwd")});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("-o OUT is required"), std::string::npos) << no_out.err;
}

}  // namespace
}  // namespace acc::test
