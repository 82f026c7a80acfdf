// Outside programs the report tests open reports with: a Python with a given
// module (openpyxl, numpy) and headless Chromium.
#pragma once

#include <string>
#include <vector>

#include "tests/e2e/harness.h"

namespace acc::test {

// The harness's python() when it can import `module`, else /usr/bin/python3
// when that can; empty when neither can.
std::string pythonWith(const std::string& module);

constexpr const char* kChromium = "/usr/bin/chromium";
bool chromiumInstalled();

// Runs headless Chromium on file://`html` with a fresh profile, a 1400x1000
// window and `flags` (e.g. "--dump-dom" or "--screenshot=PATH"); at most 180 s.
RunResult runChromium(const std::string& html, const std::vector<std::string>& flags);

// Number of non-overlapping occurrences of `needle` in `text`.
size_t countOf(const std::string& text, const std::string& needle);

}  // namespace acc::test
