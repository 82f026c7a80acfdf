// report.html: one self-contained page (inline CSS, JS and SVG, no network):
// the verdict and first origin, a plot of error along execution order, a
// sortable table of tensor pairs, and the origin's statistics and stack.
#pragma once

#include <string>

#include "analyzer/common/result.h"

namespace acc::analyzer {

// Throws std::runtime_error naming `path` when it cannot be written.
void writeHtmlReport(const CompareResult& result, const std::string& path);

}  // namespace acc::analyzer
