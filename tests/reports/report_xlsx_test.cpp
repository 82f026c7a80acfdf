// report.xlsx: written from a synthetic CompareResult, opened with openpyxl.
#include <gtest/gtest.h>

#include <cstdint>
#include <chrono>
#include <fstream>

#include "analyzer/report/columns.h"
#include "analyzer/report/report_xlsx.h"
#include "tests/reports/report_tools.h"
#include "tests/reports/synthetic_result.h"

namespace acc::test {
namespace {

using analyzer::ColumnType;
using analyzer::CompareResult;
using analyzer::Verdict;

// What check_xlsx.py asserts, derived from the result.
nlohmann::json expectations(const CompareResult& result) {
  nlohmann::json columns = nlohmann::json::array(), types = nlohmann::json::array();
  for (const analyzer::Column& c : analyzer::reportColumns()) {
    columns.push_back(c.name);
    types.push_back(c.type == ColumnType::Text ? "t" : c.type == ColumnType::Integer ? "i" : "n");
  }
  nlohmann::json fail = nlohmann::json::array(), warn = nlohmann::json::array(), values = nlohmann::json::array();
  int row = 1;
  for (const analyzer::RecordComparison& r : result.records) {
    for (const analyzer::TensorPair& p : r.tensors) {
      ++row;
      if (p.verdict == Verdict::Fail) fail.push_back(row);
      if (p.verdict == Verdict::Warn) warn.push_back(row);
      if (r.origin && p.verdict == Verdict::Fail && p.metrics.compared) {
        values.push_back({row, "name", r.name});
        values.push_back({row, "cosine", p.metrics.cosine});
        values.push_back({row, "rel_l2", p.metrics.rel_l2});
        values.push_back({row, "index", static_cast<int64_t>(r.index0)});
        values.push_back({row, "origin", "yes"});
      }
      if (r.op.find('<') != std::string::npos) values.push_back({row, "op", r.op});
      if (!p.metrics.compared) values.push_back({row, "mismatch", p.metrics.mismatch});
    }
  }
  nlohmann::json sheets = {"tensors", "origins"};
  if (!result.steps.empty()) sheets.push_back("steps");
  if (!result.unmatched.empty()) sheets.push_back("unmatched");
  sheets.push_back("about");
  return {{"sheets", sheets}, {"columns", columns}, {"types", types}, {"rows", row - 1}, {"fail_rows", fail},
          {"warn_rows", warn}, {"origins", result.origins.size()}, {"values", values}};
}

RunResult checkXlsx(const TempDir& dir, const std::string& report, const nlohmann::json& expected) {
  const std::string py = pythonWith("openpyxl");
  if (py.empty()) {
    ADD_FAILURE() << "no Python with openpyxl: apt-get install python3-openpyxl (scripts/setup.sh installs it)";
    return {};
  }
  std::ofstream(dir / "expected.json") << expected.dump();
  return run({{py, testScript("check_xlsx.py"), report, dir / "expected.json"}, {}, "", false, ""});
}

TEST(ReportXlsx, OpensInOpenpyxlWithColumnsNumbersFrozenHeaderAndFills) {
  TempDir dir;
  CompareResult result = syntheticResult();
  writeXlsxReport(result, dir / "report.xlsx");
  RunResult check = checkXlsx(dir, dir / "report.xlsx", expectations(result));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("ok"), std::string::npos) << check.out;
}

TEST(ReportXlsx, NoOriginsNoUnmatchedStillTwoSheets) {
  TempDir dir;
  CompareResult result = syntheticResult();
  result.origins.clear();
  result.unmatched.clear();
  for (auto& r : result.records) r.origin = false;
  writeXlsxReport(result, dir / "report.xlsx");
  nlohmann::json expected = expectations(result);
  RunResult check = checkXlsx(dir, dir / "report.xlsx", expected);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(ReportXlsx, FiftyThousandRowsWriteQuicklyAndOpen) {
  TempDir dir;
  CompareResult result = largeResult(25000);
  auto start = std::chrono::steady_clock::now();
  writeXlsxReport(result, dir / "report.xlsx");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10) << "writing 50000 rows took " << seconds << " s";
  RunResult check = checkXlsx(dir, dir / "report.xlsx", expectations(result));
  EXPECT_EQ(check.exit_code, 0) << check.out.substr(0, 2000) << check.err;
}

TEST(ReportXlsx, UnwritablePathThrowsNamingIt) {
  const std::string path = "/nonexistent-acc-dir/report.xlsx";
  try {
    writeXlsxReport(syntheticResult(), path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace acc::test
