// Small text forms shared by the analyzer's commands and reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace acc::analyzer {

// [2, 3, 4]
std::string shapeText(const std::vector<int64_t>& shape);

// ASCII lower case, for case-insensitive name matching.
std::string lowerCase(std::string s);

// printf-formatted number, with nan, inf and -inf spelled out.
std::string numberText(double v, const char* format = "%.6g");
// A module path as reports show it: "" (ops in the outermost module's own
// forward, or outside every module) reads "(top level)".
std::string moduleLabel(const std::string& module);

// A whole string read as a number (strtod's forms, inf included); false for
// an empty string, trailing text or nan.
bool parseNumber(const std::string& s, double& v);

// 512 bytes, 3.4 kB, 1.25 GB (decimal units, three significant digits).
std::string bytesText(double bytes);

}  // namespace acc::analyzer
