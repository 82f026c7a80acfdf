#include "analyzer/compare/judge_args.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace acc::analyzer {

bool parseNumber(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && !std::isnan(v);
}

std::string parseJudgeArgs(const std::vector<std::string>& argv, JudgeArgs& a, bool& help, const ExtraFlag& extra) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string flag = argv[i], inline_value;
    bool has_value = false;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    const FlagValue next = [&]() -> std::optional<std::string> {
      if (has_value) return inline_value;
      if (i + 1 >= argv.size()) return std::nullopt;
      return argv[++i];
    };
    std::string v;
    auto need = [&]() -> bool {
      auto got = next();
      if (got) v = *got;
      return got.has_value();
    };
    double x = 0;
    if (flag == "-h" || flag == "--help") {
      help = true;
      return "";
    } else if (flag == "--json") {
      a.json = true;
    } else if (flag == "--only-failed") {
      a.filter.only_failed = true;
    } else if (flag == "-o" || flag == "--output") {
      if (!need()) return flag + " needs a value";
      if (v.empty()) return flag + " needs a directory";
      a.out = v;
    } else if (flag == "--op-list") {
      if (!need()) return flag + " needs a value";
      std::stringstream items(v);
      std::string item;
      while (std::getline(items, item, ',')) {
        if (!item.empty()) a.op_list.push_back(item);
      }
      if (a.op_list.empty()) return "--op-list needs op names, e.g. --op-list relu,conv";
    } else if (flag == "--threads") {
      if (!need()) return flag + " needs a value";
      if (!parseNumber(v, x) || x < 1 || x > 1024 || x != std::floor(x)) return "--threads: '" + v + "' is not 1..1024";
      a.threads = static_cast<unsigned>(x);
    } else if (flag == "--origin-factor") {
      if (!need()) return flag + " needs a value";
      if (!parseNumber(v, x) || x < 1) return "--origin-factor: '" + v + "' is not a number >= 1";
      a.thresholds.origin_factor = x;
    } else if (isThresholdFlag(flag)) {
      if (!need()) return flag + " needs a value";
      if (std::string err = applyThresholdFlag(a.thresholds, flag, v); !err.empty()) return err;
    } else if (auto handled = extra ? extra(flag, next) : std::nullopt) {
      if (!handled->empty()) return *handled;
    } else if (!flag.empty() && flag[0] == '-') {
      return "unknown option " + flag;
    } else {
      a.positional.push_back(flag);
    }
  }
  return "";
}

}  // namespace acc::analyzer
