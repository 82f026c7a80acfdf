// report.csv: one row per tensor pair in execution order, the columns of
// columns.h, RFC 4180 quoting.
#pragma once

#include <string>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// Throws std::runtime_error naming `path` when it cannot be written.
void writeCsvReport(const CompareResult& result, const std::string& path);

}  // namespace acc::analyzer
