// The command line compare and check share: the report directory, --json,
// the report filters, --op-list, --threads, --origin-factor and the
// threshold flags. Each command adds its own flags through `extra`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/compare/report_filter.h"
#include "analyzer/compare/thresholds.h"

namespace acc::analyzer {

struct JudgeArgs {
  std::string out;  // the command's default report directory
  bool json = false;
  ReportFilter filter;
  std::vector<std::string> op_list;
  unsigned threads = 0;  // 0: one per core
  Thresholds thresholds = defaultThresholds();
  std::vector<std::string> positional;  // the recording directories
};

// A number and nothing else (no NaN).
bool parseNumber(const std::string& s, double& v);

// The value of the flag being parsed ("--flag=value" or the next argument);
// nullopt when there is none.
using FlagValue = std::function<std::optional<std::string>()>;
// A command's own flag: nullopt when `flag` is not one of them, else an error
// message ("" when it parsed).
using ExtraFlag = std::function<std::optional<std::string>(const std::string& flag, const FlagValue& value)>;

// Returns an error message, "" when `argv` parsed (or -h/--help: `help`).
std::string parseJudgeArgs(const std::vector<std::string>& argv, JudgeArgs& a, bool& help,
                           const ExtraFlag& extra = {});

}  // namespace acc::analyzer
