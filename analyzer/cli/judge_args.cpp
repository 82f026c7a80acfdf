#include "analyzer/cli/judge_args.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "analyzer/cli/command_line.h"
#include "analyzer/common/text.h"

namespace acc::analyzer {

void addReportOptions(CLI::App& app, JudgeArgs& a) {
  app.add_flag("--json", a.json);
  app.add_flag("--progress", a.progress);
  app.add_flag("--only-failed", a.filter.only_failed);
  addChecked(app, "-o,--output", [&a](const std::string& v) {
    a.out = v;
    return v.empty() ? "-o needs a directory" : "";
  });
}

void addMinCosineOption(CLI::App& app, JudgeArgs& a) {
  addChecked(app, "--min-cosine", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < -1 || x > 1) return "--min-cosine: '" + v + "' is not a number in [-1, 1]";
    a.filter.min_cosine = x;
    return "";
  });
}

void addJudgeOptions(CLI::App& app, JudgeArgs& a) {
  addReportOptions(app, a);
  addChecked(app, "--op-list", [&a](const std::string& v) {
    std::stringstream items(v);
    for (std::string item; std::getline(items, item, ',');) {
      if (!item.empty()) a.op_list.push_back(item);
    }
    return a.op_list.empty() ? "--op-list needs op names, e.g. --op-list relu,conv" : "";
  });
  addChecked(app, "--threads", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < 1 || x > 1024 || x != std::floor(x)) return "--threads: '" + v + "' is not 1..1024";
    a.threads = static_cast<unsigned>(x);
    return "";
  });
  addChecked(app, "--origin-factor", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < 1) return "--origin-factor: '" + v + "' is not a number >= 1";
    a.thresholds.origin_factor = x;
    return "";
  });
  addChecked(app, "--kernel-factor", [&a](const std::string& v) -> std::string {
    double x = 0;
    if (!parseNumber(v, x) || x < 1) return "--kernel-factor: '" + v + "' is not a number >= 1";
    a.thresholds.kernel_factor = x;
    return "";
  });
  for (const std::string& flag : thresholdFlags()) {
    addChecked(app, flag, [&a, flag](const std::string& v) {
      a.threshold_flags.emplace_back(flag, v);
      return applyThresholdFlag(a.thresholds, flag, v);
    });
  }
  app.add_option("DIR", a.positional);
}

}  // namespace acc::analyzer
