// The four reports compare and check write into one directory:
// summary.json, report.csv, report.xlsx, report.html.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "analyzer/cli/judge_args.h"
#include "analyzer/common/result.h"

namespace acc::analyzer {

struct WrittenReports {
  nlohmann::json summary;
  CompareResult shown;              // the rows the report filters kept (empty when none is active)
  std::vector<std::string> paths;   // summary.json, report.csv, report.xlsx, report.html
};

// Writes `result`'s reports into args.out, as a command run with `args` asks
// (report filters, --op-list, thresholds): the row reports of the whole
// result or of what the filters kept, each on a thread of its own, then
// summary.json (summaryJson with `exit_code` and the process's peak memory,
// then `extend` adds the command's own keys). Returns the
// message to print when they cannot be written, else "".
// `tick(done, total)`, when set, is called on this thread about every 100 ms
// while the row reports are written (progress for long comparisons).
std::string writeReports(const JudgeArgs& args, const CompareResult& result, int exit_code,
                         const std::function<void(nlohmann::json&)>& extend, WrittenReports& out,
                         const std::function<void(size_t, size_t)>& tick = {});

// Orders result.origins by execution: step, then DIR0's index, then rank.
void sortOrigins(CompareResult& result);

}  // namespace acc::analyzer
