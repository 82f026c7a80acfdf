#include "analyzer/common/text.h"

#include <cstdint>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace acc::analyzer {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool parseNumber(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && !std::isnan(v);
}

std::string lowerCase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string numberText(double v, const char* format) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string bytesText(double bytes) {
  const char* units[] = {"bytes", "kB", "MB", "GB", "TB"};
  size_t u = 0;
  while (bytes >= 1000 && u + 1 < sizeof units / sizeof units[0]) bytes /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.3g %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string moduleLabel(const std::string& module) { return module.empty() ? "(top level)" : module; }

}  // namespace acc::analyzer
