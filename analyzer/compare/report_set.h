// The four reports compare and check write into one directory:
// summary.json, report.csv, report.xlsx, report.html.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analyzer/compare/result.h"

namespace acc::analyzer {

struct ReportSet {
  std::string summary, csv, xlsx, html;
  std::vector<std::string> list() const { return {summary, csv, xlsx, html}; }
  nlohmann::json json() const { return {{"summary", summary}, {"csv", csv}, {"xlsx", xlsx}, {"html", html}}; }
};

// Creates `dir`; returns the message to print when it cannot, else "".
std::string openReportSet(const std::string& dir, ReportSet& set);

// Writes `summary` and the row reports of `rows` (the whole result, or what
// the report filters kept). Returns the message to print on failure, else "".
std::string writeReportSet(const ReportSet& set, const nlohmann::json& summary, const CompareResult& rows);

// Orders result.origins by execution: step, then DIR0's index, then rank.
void sortOrigins(CompareResult& result);

}  // namespace acc::analyzer
