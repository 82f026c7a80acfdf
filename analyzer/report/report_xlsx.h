// report.xlsx: one row per tensor pair in execution order (the columns of
// report.csv, analyzer/report/columns.h), failing rows filled red, warn rows
// yellow, frozen header with autofilter; a second sheet lists the origins.
#pragma once

#include <string>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// Throws std::runtime_error naming `path` when it cannot be written.
void writeXlsxReport(const CompareResult& result, const std::string& path);

}  // namespace acc::analyzer
