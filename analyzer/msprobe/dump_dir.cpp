#include "analyzer/msprobe/dump_dir.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyzer/read/recording.h"

namespace acc::analyzer::msprobe {
namespace fs = std::filesystem;
namespace {

constexpr const char* kDumpJson = "dump.json";

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number in a folder name such as step12 or rank3; -1 when it is not one.
int64_t numbered(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(digits);
}

bool holdsDump(const fs::path& dir) { return fs::is_regular_file(dir / kDumpJson); }

// The rank and proc folders of a step folder that hold a dump.json.
std::vector<fs::path> rankFolders(const fs::path& step) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(step, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && (name.rfind("rank", 0) == 0 || name.rfind("proc", 0) == 0) && holdsDump(e.path())) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> stepFolders(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory() && numbered(e.path().filename().string(), "step") >= 0 && !rankFolders(e.path()).empty()) {
      out.push_back(e.path());
    }
  }
  return out;
}

void addStep(const fs::path& step_dir, int64_t step, std::vector<DumpLeaf>& leaves) {
  int64_t proc = 0;
  for (const fs::path& r : rankFolders(step_dir)) {
    const int64_t rank = numbered(r.filename().string(), "rank");
    leaves.push_back({step, rank >= 0 ? rank : proc++, r.string()});
  }
}

}  // namespace

bool isDump(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p.filename() == kDumpJson;
  return holdsDump(p) || !rankFolders(p).empty() || !stepFolders(p).empty();
}

std::vector<DumpLeaf> findLeaves(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (fs::is_regular_file(p, ec) && p.filename() == kDumpJson) p = p.parent_path();
  std::vector<DumpLeaf> leaves;
  auto stepOf = [](const fs::path& dir) { return std::max<int64_t>(0, numbered(dir.filename().string(), "step")); };
  if (holdsDump(p)) {
    const int64_t rank = numbered(p.filename().string(), "rank");
    leaves.push_back({stepOf(p.parent_path()), std::max<int64_t>(0, rank), p.string()});
  } else if (!rankFolders(p).empty()) {
    addStep(p, stepOf(p), leaves);
  } else {
    for (const fs::path& s : stepFolders(p)) addStep(s, stepOf(s), leaves);
  }
  if (leaves.empty()) {
    throw InputError(path + " is no msprobe dump: no dump.json in it, in its rank/proc folders or in "
                            "step*/{rank,proc}* folders below it");
  }
  std::sort(leaves.begin(), leaves.end(),
            [](const DumpLeaf& a, const DumpLeaf& b) { return std::tie(a.rank, a.step) < std::tie(b.rank, b.step); });
  return leaves;
}

nlohmann::ordered_json readDumpJson(const std::string& path) {
  const std::string text = readText(path);
  // Python's non-JSON number tokens, outside strings, become strings.
  std::string clean;
  clean.reserve(text.size() + 64);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      clean += c;
      if (c == '\\' && i + 1 < text.size()) {
        clean += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* token : {"NaN", "Infinity", "-Infinity"}) {
      const size_t n = std::strlen(token);
      if (text.compare(i, n, token) == 0) {
        clean += std::string("\"") + token + "\"";
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) clean += c;
  }
  try {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(clean);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_object()) {
      throw InputError(path + ": not an msprobe dump.json (no \"data\" object)");
    }
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
}

double number(const nlohmann::ordered_json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
  }
  return NAN;
}

std::map<std::string, std::vector<std::string>> readStacks(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  if (!fs::is_regular_file(path)) return out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(readText(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
  // "File /a/b.py, line 16, in forward, \n h = h * 2" -> "/a/b.py:16 forward"
  static const std::regex frame(R"(^File (.*), line (\d+), in ([^,]*),)");
  auto frames = [](const nlohmann::json& list) {
    std::vector<std::string> v;
    for (const auto& f : list) {
      if (!f.is_string()) continue;
      std::smatch m;
      const std::string& s = f.get_ref<const std::string&>();
      v.push_back(std::regex_search(s, m, frame) ? m[1].str() + ":" + m[2].str() + " " + m[3].str() : s);
    }
    return v;
  };
  if (!j.is_object()) return out;
  for (const auto& [key, value] : j.items()) {
    if (value.is_array() && value.size() == 2 && value[0].is_array() && value[1].is_array()) {
      // {"0": [[entries...], [frames...]]}
      const std::vector<std::string> f = frames(value[1]);
      for (const auto& entry : value[0]) {
        if (entry.is_string()) out[entry.get<std::string>()] = f;
      }
    } else if (value.is_array()) {
      out[key] = frames(value);  // the older form: {entry: [frames...]}
    }
  }
  return out;
}

std::map<std::string, std::string> readParents(const std::string& path) {
  std::map<std::string, std::string> out;
  if (!fs::is_regular_file(path)) return out;
  try {
    nlohmann::json j = nlohmann::json::parse(readText(path));
    if (!j.is_object()) return out;
    for (const auto& [key, value] : j.items()) {
      if (value.is_string()) out[key] = value.get<std::string>();
      // Megatron's [parent, micro step]
      if (value.is_array() && !value.empty() && value[0].is_string()) out[key] = value[0].get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not valid JSON (" + e.what() + ")");
  }
  return out;
}

}  // namespace acc::analyzer::msprobe
