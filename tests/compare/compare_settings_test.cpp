// Precision settings (docs/METRICS.md, "Precision settings"): the manifest
// holds each run's numeric settings, compare shows where two runs' settings
// differ before anything else, and compare and check judge a matmul at the
// precision the settings allow it. The test accelerator's
// TESTDEV_MATMUL=tf32 computes float32 matmuls in TF32 as a GPU's tensor
// cores do: right when the program allowed TF32
// (torch.set_float32_matmul_precision("high")), wrong when it did not.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/compare/recordings.h"

namespace acc::test {
namespace {

// Torch 2.9's fp32_precision API, recorded where torch has it.
constexpr const char* kNewMatmulApi = "torch.backends.cuda.matmul.fp32_precision";

nlohmann::json numericsOf(const std::string& dir) {
  return nlohmann::json::parse(readFile(dir + "/rank0/manifest.json"))["numerics"];
}

std::map<std::string, std::string> tf32Device(bool allowed) {
  std::map<std::string, std::string> env = {{"DEVICE", "testdev"}, {"TESTDEV_MATMUL", "tf32"}};
  if (allowed) env["MATMUL_PRECISION"] = "high";
  return env;
}

// The verdicts of the produced tensors of `op`'s records in report.csv.
std::vector<std::string> producedVerdicts(const std::string& csv_path, const std::string& op) {
  std::vector<std::string> verdicts;
  std::istringstream lines(readFile(csv_path));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("," + op + ",") == std::string::npos) continue;
    if (line.find(",output,") == std::string::npos && line.find(",grad_out,") == std::string::npos) continue;
    for (const char* v : {",pass,", ",warn,", ",fail,"}) {
      if (line.find(v) != std::string::npos) verdicts.push_back(std::string(v).substr(1, 4));
    }
  }
  return verdicts;
}

TEST(Settings, ManifestHoldsTheRunsNumericSettings) {
  const nlohmann::json plain = numericsOf(benignRun("threads1", "2"));
  EXPECT_EQ(plain["torch.get_float32_matmul_precision"], "highest") << plain;
  EXPECT_EQ(plain["torch.backends.cuda.matmul.allow_tf32"], false);
  EXPECT_EQ(plain["torch.backends.cudnn.allow_tf32"], true);  // torch's default
  EXPECT_EQ(plain["torch.are_deterministic_algorithms_enabled"], false);
  EXPECT_EQ(plain["torch.get_default_dtype"], "float32");
  EXPECT_TRUE(plain.contains("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction"));
  EXPECT_EQ(plain["autocast"], nlohmann::json::array());
  EXPECT_EQ(plain["changed"], nlohmann::json::array());

  // Autocast is per thread: noted from the ops it covers. A setting changed
  // after the first step is listed as changed, with its last value.
  const nlohmann::json mixed = numericsOf(benignRun(
      "autocast_later", "1", {{"AUTOCAST", "bfloat16"}, {"MATMUL_PRECISION_LATER", "medium"}, {"DETERMINISTIC", "1"}}));
  EXPECT_EQ(mixed["autocast"], nlohmann::json::array({"cpu:bfloat16"})) << mixed;
  EXPECT_EQ(mixed["torch.get_float32_matmul_precision"], "medium");
  // allow_tf32 (and from torch 2.9 on the new API's fp32_precision) follows
  // the matmul precision in torch.
  nlohmann::json changed = {"torch.backends.cuda.matmul.allow_tf32", "torch.get_float32_matmul_precision"};
  if (mixed.contains(kNewMatmulApi)) changed.insert(changed.begin() + 1, kNewMatmulApi);
  EXPECT_EQ(mixed["changed"], changed) << mixed;
  EXPECT_EQ(mixed["torch.are_deterministic_algorithms_enabled"], true);
}

TEST(Settings, RunsThatDifferOnlyInSettingsShowThemFirst) {
  const std::string a = benignRun("threads1", "2"),
                    b = benignRun("deterministic_high", "2", {{"DETERMINISTIC", "1"}, {"MATMUL_PRECISION", "high"}});
  TempDir out;
  Analysis c = analyze({"compare", a, b}, out.path());
  EXPECT_EQ(c.run.exit_code, 0) << c.run.out << c.run.err;  // on the CPU neither changes a number
  std::istringstream lines(c.run.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_NE(first.find("numeric settings differ"), std::string::npos) << c.run.out;
  EXPECT_EQ(second, "  torch.are_deterministic_algorithms_enabled: DIR0 false, DIR1 true") << c.run.out;
  EXPECT_NE(c.run.out.find("  torch.get_float32_matmul_precision: DIR0 \"highest\", DIR1 \"high\""), std::string::npos);

  // allow_tf32 (and torch 2.9's fp32_precision) follow the matmul precision.
  const nlohmann::json& differ = c.summary["settings"]["differ"];
  nlohmann::json names = nlohmann::json::array();
  for (const nlohmann::json& d : differ) names.push_back(d["setting"]);
  nlohmann::json expected = {"torch.are_deterministic_algorithms_enabled", "torch.backends.cuda.matmul.allow_tf32",
                             "torch.get_float32_matmul_precision"};
  if (c.summary["settings"]["dir1"].contains(kNewMatmulApi)) expected.insert(expected.begin() + 2, kNewMatmulApi);
  EXPECT_EQ(names, expected) << differ;
  ASSERT_FALSE(differ.empty());
  EXPECT_EQ(differ[0]["dir0"], false);
  EXPECT_EQ(differ[0]["dir1"], true);
  EXPECT_EQ(c.summary["settings"]["dir1"]["torch.get_float32_matmul_precision"], "high");

  // The HTML report shows them above the verdict.
  const std::string html = readFile(out.path() + "/report.html");
  const size_t settings = html.find("id=\"settings\""), verdict = html.find("id=\"verdict\"");
  ASSERT_NE(settings, std::string::npos);
  EXPECT_LT(settings, verdict);
  EXPECT_NE(html.find("torch.are_deterministic_algorithms_enabled"), std::string::npos);

  // The same settings: nothing to show.
  TempDir same;
  Analysis d = analyze({"compare", a, benignRun("threads2", "2", {{"THREADS", "2"}})}, same.path());
  EXPECT_EQ(d.summary["settings"]["differ"], nlohmann::json::array());
  EXPECT_EQ(d.run.out.find("numeric settings differ"), std::string::npos) << d.run.out;
}

// TF32 matmuls where the settings allow them: compare (levels 1 and 2) and
// check judge linear at TF32 precision and find no wrong kernel.
TEST(Settings, Tf32WhereAllowedIsNoWrongKernel) {
  const std::string tf32 = benignRun("tf32_allowed", "2", tf32Device(true));
  TempDir checked;
  Analysis k = analyze({"check", tf32}, checked.path());
  EXPECT_EQ(k.run.exit_code, 0) << k.run.out << k.run.err;
  EXPECT_NE(k.run.out.find("matmul/conv op(s) judged at tf32, which torch.get_float32_matmul_precision allows"),
            std::string::npos)
      << k.run.out;
  EXPECT_NE(readFile(checked.path() + "/report.csv").find("(at tf32, allowed by torch.get_float32_matmul_precision)"),
            std::string::npos);

  for (const char* level : {"1", "2"}) {
    SCOPED_TRACE(std::string("level ") + level);
    TempDir out;
    Analysis c = analyze({"compare", benignRun("threads1", level), benignRun("tf32_allowed", level, tf32Device(true))},
                         out.path());
    EXPECT_EQ(c.run.exit_code, 0) << c.run.out << c.run.err;
    EXPECT_EQ(c.summary["counts"]["origins"], 0) << c.run.out;
    for (const std::string& v : producedVerdicts(out.path() + "/report.csv", "aten::linear")) EXPECT_NE(v, "fail");
  }
}

// The same device when the program did not allow TF32: linear is the first
// wrong kernel for check and compare, confirmed by replay.
TEST(Settings, Tf32WithoutPermissionIsAWrongKernel) {
  const std::string tf32 = benignRun("tf32_not_allowed", "2", tf32Device(false));
  TempDir checked;
  Analysis k = analyze({"check", tf32}, checked.path());
  EXPECT_EQ(k.run.exit_code, 1) << k.run.out << k.run.err;
  ASSERT_TRUE(k.summary["first_divergence"].is_object()) << k.run.out;
  EXPECT_EQ(k.summary["first_divergence"]["op"], "aten::linear");
  EXPECT_EQ(k.summary["first_divergence"]["replay"]["verdict"], "confirmed");
  EXPECT_FALSE(k.summary["first_divergence"]["replay"].contains("precision"));

  TempDir out;
  Analysis c = analyze({"compare", benignRun("threads1", "2"), tf32}, out.path());
  EXPECT_EQ(c.run.exit_code, 1) << c.run.out << c.run.err;
  EXPECT_EQ(c.summary["first_divergence"]["op"], "aten::linear") << c.run.out;
  EXPECT_TRUE(c.summary["first_divergence"]["origin"].get<bool>());
  EXPECT_EQ(c.summary["first_divergence"]["replay"]["verdict"], "confirmed");
  EXPECT_TRUE(c.summary["settings"]["differ"].empty()) << c.summary["settings"];
}

}  // namespace
}  // namespace acc::test
