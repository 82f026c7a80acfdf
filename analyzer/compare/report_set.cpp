#include "analyzer/compare/report_set.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "analyzer/compare/csv_report.h"
#include "analyzer/report_html.h"
#include "analyzer/report_xlsx.h"

namespace acc::analyzer {

std::string openReportSet(const std::string& dir, ReportSet& set) {
  namespace fs = std::filesystem;
  const fs::path out(dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) return "cannot create the report directory " + dir + ": " + ec.message();
  set.summary = (out / "summary.json").string();
  set.csv = (out / "report.csv").string();
  set.xlsx = (out / "report.xlsx").string();
  set.html = (out / "report.html").string();
  return "";
}

std::string writeReportSet(const ReportSet& set, const nlohmann::json& summary, const CompareResult& rows) {
  try {
    {
      std::ofstream s(set.summary, std::ios::trunc);
      s << summary.dump(2) << "\n";
      if (!s) throw std::runtime_error(set.summary + ": cannot write");
    }
    writeCsvReport(rows, set.csv);
    writeXlsxReport(rows, set.xlsx);
    writeHtmlReport(rows, set.html);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void sortOrigins(CompareResult& result) {
  std::stable_sort(result.origins.begin(), result.origins.end(), [&](size_t x, size_t y) {
    const RecordComparison& a = result.records[x];
    const RecordComparison& b = result.records[y];
    return std::tie(a.step, a.index0, a.rank) < std::tie(b.step, b.index0, b.rank);
  });
}

}  // namespace acc::analyzer
